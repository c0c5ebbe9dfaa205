#!/bin/sh
# bench_ab (tests/bench_ab.c): bad input refused in one line with exit 2;
# an A/A run of tiled checks both arms and finds their outputs the same bits
# (tiled is deterministic); B with another tile, lazy rescale, bf16 K
# path, bf16 P.V path, prefetch distance or page size is named and timed,
# with the same bits where it must give them. (Its verdicts are the checker's,
# attn_check_output: test_checker plants bugs.)
bin=${1:?usage: test_bench_ab.sh path/to/bench_ab}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

echo "1..20"
refused "unknown backend 'nosuch'" --vs nosuch
refused "--tile: '64x' is not BRxBC" --tile 64x
refused "bench_ab: --rounds: '2' is not an integer in [3, 101]" --rounds 2
refused "--kv-heads 3 does not divide --heads 8" --kv-heads 3
refused "--dtype: 'q4_0' is not a storage type of Q" --dtype q4_0
refused "--vs-lazy: 'maybe' is not one of: on, off" --vs-lazy maybe
refused "--steal: 'maybe' is not one of: on, off" --steal maybe
refused "--kbf16: 'yes' is not one of: on, off, auto" --kbf16 yes
refused "--vs-pv-bf16: 'yes' is not one of: on, off, auto" --vs-pv-bf16 yes
refused "--vs-pf-keys: '0' is not an integer in [1, 65536]" --vs-pf-keys 0
refused "--page: '1025' is not an integer in [0, 1024]" --page 1025

# ran DESC ARGS...: bench_ab ARGS, its output kept for expect.
ran() {
    desc=$1
    shift
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    code=$?
}

# expect PATTERN...: the last run exited 0 and printed a line matching each.
expect() {
    pass=0
    if [ "$code" = 0 ]; then
        pass=1
        for p; do
            grep -q -- "$p" "$tmp/out" || pass=0
        done
    fi
    result "$pass" "$desc" "exit $code: $(cat "$tmp/out" "$tmp/err")"
}

passed_a='^A: .*: PASSED, '
passed_b='^B: .*: PASSED, '
same='^B/A: [0-9.]* (medians), [0-9.]* (best); outputs the same bits$'
small="--seq 64 --dk 32 --heads 2 --rounds 3 --min-time 0.001"

# shellcheck disable=SC2086
ran "A/A of tiled: both PASSED, the same bits, a ratio" $small
expect "$passed_a" "$passed_b" "$same"

# shellcheck disable=SC2086
ran "B with another tile, causal: named and timed" $small --causal --vs-tile 16x48
expect 'B: tiled (.*tile 16x48' '^B/A: [0-9.]* (medians)'

# The lazy rescale off in B, on C's kernels (every CPU has their qk_exp):
# named, and the weights of the second key tile rounded another way.
ran "B with the lazy rescale off: named, timed, its outputs rounded otherwise" \
    --seq 200 --dk 32 --heads 2 --rounds 3 --min-time 0.001 --isa c --vs-lazy off
expect 'B: tiled (.*lazy rescale off)' \
    '^B/A: [0-9.]* (medians), [0-9.]* (best); outputs differ$'

# Split chunks without stealing in B (4 chunks a K/V head of 2): named,
# and the same bits.
ran "B without stealing: named, timed, the same bits" \
    --heads 4 --kv-heads 2 --seq 1 --seq-kv 2048 --dk 32 --splits 4 --threads 2 --rounds 3 \
    --min-time 0.001 --vs-steal off
expect 'A: tiled (2 threads, splits 4)' 'B: tiled (.*no stealing)' "$same"

# Decoding's bf16 K (16 columns: 4 query heads a K/V head, 4 queries)
# widened in A, read in place in B: named, and the same bits. At C's
# kernels: AVX2's table has no qk_kbf16 of its own (it takes C's, beside
# its own qk, which sums in another order); test_backends holds the widest
# ISA to the same bits where it has one.
ran "bf16 K widened in A, in place in B (--isa c): named, timed, the same bits" \
    --heads 8 --kv-heads 2 --seq 4 --seq-kv 300 --dk 40 --kv-dtype bf16 --rounds 3 \
    --min-time 0.001 --isa c --kbf16 off --vs-kbf16 on
expect 'A: tiled (.*bf16 K widened)' 'B: tiled (.*bf16 K in place)' "$same"

# Decoding's P.V with bf16 Q and K/V by pv16 in A, on bf16 dot products
# (P rounded to bf16) in B: named, both PASSED (the same bits only where
# the CPU has no bf16 dot products and both run pv16).
ran "bf16 decoding's P.V by pv16 in A, on bf16 dot products in B: named, both PASSED" \
    --heads 8 --kv-heads 2 --seq 1 --seq-kv 300 --dk 40 --dtype bf16 --kv-dtype bf16 \
    --rounds 3 --min-time 0.001 --pv-bf16 off --vs-pv-bf16 on
expect "$passed_a" "$passed_b" 'A: tiled (.*P.V by pv16)' 'B: tiled (.*P.V on bf16 dot products)'

# Decoding's prefetch distance, 1 fp32 row ahead in A, 4096 in B (past
# every key), in pages of 16: named, and the same bits.
dec="--heads 8 --kv-heads 2 --seq 1 --seq-kv 300 --dk 32 --kv-dtype bf16 --rounds 3 --min-time 0.001"
# shellcheck disable=SC2086
ran "prefetch distances 1 and 4096, pages of 16: named, timed, the same bits" \
    $dec --page 16 --pf-keys 1 --vs-pf-keys 4096
expect 'A: tiled (.*prefetch 1 fp32 rows ahead, pages of 16)' \
    'B: tiled (.*prefetch 4096 fp32 rows ahead, pages of 16)' "$same"

# The dense cache in A, pages of 16 in B: both checked and timed; the
# outputs not compared (the two layouts are filled in their own orders).
# shellcheck disable=SC2086
ran "dense cache against pages of 16: both PASSED, timed, not compared" $dec --vs-page 16
expect "$passed_a" "$passed_b" 'B: tiled (.*pages of 16)' \
    '^B/A: [0-9.]* (medians), [0-9.]* (best); outputs not compared'

# Pages of 16 against pages of 48, both in tiles of 16: the same keys in
# the same tiles, so the same bits through two block tables.
# shellcheck disable=SC2086
ran "pages of 16 against 48 in tiles of 16: the same bits" \
    $dec --tile 1x16 --page 16 --vs-page 48
expect 'A: tiled (.*pages of 16)' 'B: tiled (.*pages of 48)' "$same"
