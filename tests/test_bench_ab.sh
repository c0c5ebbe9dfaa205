#!/bin/sh
# bench_ab (tests/bench_ab.c): bad input refused in one line with exit 2;
# an A/A run of tiled checks both arms and finds their outputs the same bits
# (tiled is deterministic); B with another tile is named and timed. (Its
# verdicts are the checker's, attn_check_output: test_checker plants bugs.)
bin=${1:?usage: test_bench_ab.sh path/to/bench_ab}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

refused() {  # refused TEXT ARGS...
    text=$1
    shift
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    code=$?
    [ "$code" = 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
        grep -qF -- "$text" "$tmp/err" && pass=1 || pass=0
    result "$pass" "refused: $*" "exit $code, stderr: $(cat "$tmp/err")"
}

echo "1..11"
refused "unknown backend 'nosuch'" --vs nosuch
refused "--tile: '64x' is not BRxBC" --tile 64x
refused "--rounds: '2' is not an integer in [3, 101]" --rounds 2
refused "--kv-heads 3 does not divide --heads 8" --kv-heads 3
refused "--dtype: 'q4_0' is not a storage type of Q" --dtype q4_0
refused "--vs-lazy: 'maybe' is not one of: on, off" --vs-lazy maybe
refused "--kbf16: 'yes' is not one of: on, off, auto" --kbf16 yes

small="--seq 64 --dk 32 --heads 2 --rounds 3 --min-time 0.001"
# shellcheck disable=SC2086
"$bin" $small >"$tmp/out" 2>"$tmp/err"
code=$?
pass=0
[ "$code" = 0 ] && [ "$(grep -c ': PASSED, ' "$tmp/out")" = 2 ] &&
    grep -q '^B/A: [0-9.]* (medians), [0-9.]* (best); outputs the same bits$' "$tmp/out" && pass=1
result "$pass" "A/A of tiled: both PASSED, the same bits, a ratio" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"

# shellcheck disable=SC2086
"$bin" $small --causal --vs-tile 16x48 >"$tmp/out" 2>"$tmp/err"
code=$?
pass=0
[ "$code" = 0 ] && grep -q 'B: tiled (.*tile 16x48' "$tmp/out" &&
    grep -q '^B/A: [0-9.]* (medians)' "$tmp/out" && pass=1
result "$pass" "B with another tile, causal: named and timed" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"

# The lazy rescale off in B, on C's kernels (every CPU has their qk_exp):
# named, and the weights of the second key tile rounded another way.
"$bin" --seq 200 --dk 32 --heads 2 --rounds 3 --min-time 0.001 --isa c --vs-lazy off \
    >"$tmp/out" 2>"$tmp/err"
code=$?
pass=0
[ "$code" = 0 ] && grep -q 'B: tiled (.*lazy rescale off)' "$tmp/out" &&
    grep -q '^B/A: [0-9.]* (medians), [0-9.]* (best); outputs differ$' "$tmp/out" && pass=1
result "$pass" "B with the lazy rescale off: named, timed, its outputs rounded otherwise" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"

# Decoding's bf16 K (16 columns: 4 query heads a K/V head, 4 queries)
# widened in A, read in place in B: named, and the same bits.
"$bin" --heads 8 --kv-heads 2 --seq 4 --seq-kv 300 --dk 40 --kv-dtype bf16 --rounds 3 \
    --min-time 0.001 --kbf16 off --vs-kbf16 on >"$tmp/out" 2>"$tmp/err"
code=$?
pass=0
[ "$code" = 0 ] && grep -q 'A: tiled (.*bf16 K widened)' "$tmp/out" &&
    grep -q 'B: tiled (.*bf16 K in place)' "$tmp/out" &&
    grep -q '^B/A: [0-9.]* (medians), [0-9.]* (best); outputs the same bits$' "$tmp/out" && pass=1
result "$pass" "bf16 K widened in A, in place in B: named, timed, the same bits" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"
