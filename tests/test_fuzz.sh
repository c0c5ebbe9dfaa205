#!/bin/sh
# TAP: libFuzzer on one of the program's parsers for a bounded time
# (ATTN_FUZZ_SECONDS, default 10) from its committed corpus tests/fuzz/TARGET/,
# whose crash-* files are inputs past runs found (each also a regression case
# of the parser's own test). Targets: npy (the .npy reader, tests/fuzz_npy.c),
# cli (the command line, attnbench's and attnbench arch's, tests/fuzz_cli.c), csv (the --resume reader,
# tests/fuzz_csv.c). The same target with a planted read past an array must
# be reported, so a real one would be too.
#   test_fuzz.sh SOURCE_ROOT BUILD_ROOT plain|sanitized TARGET
src=$1
build=$2
mode=${3:-plain}
target=${4:-npy}
seconds=${ATTN_FUZZ_SECONDS:-10}
case $target in
npy) what="the .npy reader"; files="harness/npy.c" ;;
cli) what="the command line parser"
     files="harness/cli.c harness/models.c arch/cli.c backends/registry.c harness/problem.c kernels/rng.c
            kernels/isa.c backends/variant.c harness/npy.c harness/lens.c" ;;
csv) what="the --resume CSV reader"; files="harness/csv.c harness/io.c" ;;
*) echo "Bail out! unknown fuzz target '$target'"; exit 1 ;;
esac
if [ "$mode" = sanitized ]; then
    echo "1..0 # SKIP runs in the plain build (the fuzzer is built with its own sanitizers)"
    exit 0
fi
if ! command -v clang >/dev/null 2>&1; then
    echo "1..0 # SKIP clang is not installed (Debian: clang, libclang-rt-14-dev)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE
       -I$src -I$src/include -I$src/harness -I$src/backends -I$src/arch -I$build"
sources="$src/tests/fuzz_$target.c"
for f in $files; do sources="$sources $src/$f"; done
# A toolchain that cannot build libFuzzer targets at all is a reason to skip;
# once it can, a target of ours that does not build is a failure (fuzz
# coverage must not vanish because a source list went stale).
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$tmp/empty.c"
if ! clang $flags "$tmp/empty.c" -o "$tmp/empty" 2>"$tmp/cc"; then
    echo "1..0 # SKIP clang cannot build a libFuzzer target here (Debian: libclang-rt-14-dev): $(head -c 300 "$tmp/cc" | tr '\n' ' ')"
    exit 0
fi
if ! clang $flags $sources -lm -o "$tmp/fuzz" 2>"$tmp/cc" ||
   ! clang $flags -DPLANTED $sources -lm -o "$tmp/planted" 2>>"$tmp/cc"; then
    echo "not ok 1 - $target: the fuzz target does not build (tests/fuzz_$target.c and its sources in tests/test_fuzz.sh)"
    head -40 "$tmp/cc" | sed 's/^/# /'
    echo "not ok 2 - $what: not fuzzed"
    echo "1..2"
    exit 0
fi
mkdir "$tmp/corpus" "$tmp/planted-corpus"
"$tmp/planted" -max_total_time=10 -rss_limit_mb=2048 -timeout=5 -artifact_prefix="$tmp/" \
    "$tmp/planted-corpus" "$src/tests/fuzz/$target" >"$tmp/planted.log" 2>&1
code=$?
if [ "$code" != 0 ] && grep -q 'heap-buffer-overflow' "$tmp/planted.log"; then
    echo "ok 1 - $target: a planted read past an array is reported (exit $code, heap-buffer-overflow)"
else
    echo "not ok 1 - $target: a planted read past an array went unreported (exit $code)"
    tail -20 "$tmp/planted.log" | sed 's/^/# /'
fi
"$tmp/fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -print_final_stats=1 \
    -artifact_prefix="$tmp/" "$tmp/corpus" "$src/tests/fuzz/$target" >"$tmp/fuzz.log" 2>&1
code=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/fuzz.log")
if [ "$code" = 0 ]; then
    echo "ok 2 - $what: $seconds s, ${execs:-?} inputs, no crash, no leak, no sanitizer report"
else
    echo "not ok 2 - $what crashed or was reported (exit $code); the input:"
    grep -E 'SUMMARY|Base64' "$tmp/fuzz.log" | sed 's/^/# /'
    tail -30 "$tmp/fuzz.log" | sed 's/^/# /'
fi
echo "1..2"
