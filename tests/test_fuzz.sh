#!/bin/sh
# TAP: libFuzzer on the .npy reader (tests/fuzz_npy.c) for a bounded time
# (ATTN_FUZZ_SECONDS, default 30) from the committed corpus tests/fuzz/npy/,
# whose crash-* files are the inputs past runs found (each also a case of
# test_npy). The same target with a planted read past the array must be
# reported, so a real one would be too.
src=$1
mode=${2:-plain}
seconds=${ATTN_FUZZ_SECONDS:-30}
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
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I$src/harness"
if ! clang $flags "$src/tests/fuzz_npy.c" "$src/harness/npy.c" -o "$tmp/fuzz" 2>"$tmp/cc" ||
   ! clang $flags -DPLANTED "$src/tests/fuzz_npy.c" "$src/harness/npy.c" -o "$tmp/planted" 2>>"$tmp/cc"; then
    echo "1..0 # SKIP clang cannot build a libFuzzer target here: $(head -c 300 "$tmp/cc" | tr '\n' ' ')"
    exit 0
fi
mkdir "$tmp/corpus" "$tmp/planted-corpus"
"$tmp/planted" -max_total_time=10 -rss_limit_mb=2048 -timeout=5 -artifact_prefix="$tmp/" \
    "$tmp/planted-corpus" "$src/tests/fuzz/npy" >"$tmp/planted.log" 2>&1
code=$?
if [ "$code" != 0 ] && grep -q 'heap-buffer-overflow' "$tmp/planted.log"; then
    echo "ok 1 - a planted read past the array is reported (exit $code, heap-buffer-overflow)"
else
    echo "not ok 1 - a planted read past the array went unreported (exit $code)"
    tail -20 "$tmp/planted.log" | sed 's/^/# /'
fi
"$tmp/fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -print_final_stats=1 \
    -artifact_prefix="$tmp/" "$tmp/corpus" "$src/tests/fuzz/npy" >"$tmp/fuzz.log" 2>&1
code=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/fuzz.log")
if [ "$code" = 0 ]; then
    echo "ok 2 - the .npy reader: $seconds s, ${execs:-?} inputs, no crash, no sanitizer report"
else
    echo "not ok 2 - the .npy reader crashed or was reported (exit $code); the input:"
    grep -E 'SUMMARY|Base64' "$tmp/fuzz.log" | sed 's/^/# /'
    tail -30 "$tmp/fuzz.log" | sed 's/^/# /'
fi
echo "1..2"
