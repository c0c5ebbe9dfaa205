#!/bin/sh
# TAP: valgrind memcheck on the CLI, a few small cases per CPU backend: no
# error and no definitely lost block. (valgrind's CPU has no AVX-512: the
# AVX2 kernels run here.)
bin=$1
if [ "${2:-plain}" = sanitized ]; then
    echo "1..0 # SKIP a sanitizer build: valgrind cannot run AddressSanitizer binaries"
    exit 0
fi
if ! command -v valgrind >/dev/null 2>&1; then
    echo "1..0 # SKIP valgrind is not installed (Debian: valgrind)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
# memcheck PROGRAM ARGS...: true when valgrind reports nothing.
memcheck() {
    valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite -q "$@" >"$tmp/out" 2>"$tmp/err" &&
        ! grep -q '^==[0-9]*==' "$tmp/err"
}
check() {
    n=$((n + 1))
    if memcheck "$bin" "$@" --reps 1 --min-time 0.001; then
        echo "ok $n - valgrind clean: $*"
    else
        echo "not ok $n - valgrind: $*"
        sed 's/^/# /' "$tmp/err" | head -40
    fi
}

# The check itself must catch a planted leak and a planted read past a block.
cc=$(command -v cc || command -v gcc || true)
if [ -n "$cc" ]; then
    printf '#include <stdlib.h>\nint main(int c, char **v) { (void)v; int *p = malloc(40); p[0] = 1;\n  if (c > 1) return p[10] > 0; p = 0; return 0; }\n' >"$tmp/bad.c"
    if "$cc" -O0 -g -o "$tmp/bad" "$tmp/bad.c"; then
        n=$((n + 1))
        if memcheck "$tmp/bad"; then echo "not ok $n - a planted leak went unreported"
        else echo "ok $n - the check reports a planted leak: $(grep -m1 'definitely lost' "$tmp/err")"; fi
        n=$((n + 1))
        if memcheck "$tmp/bad" x; then echo "not ok $n - a planted invalid read went unreported"
        else echo "ok $n - the check reports a planted invalid read: $(grep -m1 'Invalid read' "$tmp/err")"; fi
    fi
fi
for be in naive tiled blas onednn; do
    if "$bin" --list | grep -Eq "^$be +available"; then
        check --backend=$be --seq 33 --seq-kv 40 --heads 2 --dk 16 --dv 24 --causal --threads 2
        check --backend=$be --seq 17 --batch 2 --heads 1 --dk 8 --kv-len 17,5 --threads 1
    else
        n=$((n + 1))
        echo "ok $n - # SKIP $be is not available in this build"
    fi
done
check --backend=local,sparse,linear,performer,linformer --seq 40 --heads 2 --dk 8 --window 4 \
    --globals 2 --random-blocks 1 --block 8 --features 8 --proj 8 --threads 2
echo "1..$n"
