#!/bin/sh
# bench_pool (tests/bench_pool.c): bad input refused in one line with exit
# 2; a small run reads its pool as a sequential stream and as shuffled runs,
# each pass's sum checked, and prints one row a size; with --plant (every
# shuffled pass skips its last run) the check stops it with exit 1.
bin=${1:?usage: test_bench_pool.sh path/to/bench_pool}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

echo "1..8"
refused "bench_pool: --pool: '8' is not an integer in [16, 16384]" --pool 8
refused "--runs: 1000 is not a multiple of 64 dividing the pool (16 MiB)" --pool 16 --runs 1000
refused "--runs: 3136 is not a multiple of 64 dividing the pool (16 MiB)" --pool 16 --runs 3136
refused "--rounds: '2' is not an integer in [3, 101]" --rounds 2
refused "--ahead: 100 is not a multiple of 64" --ahead 100
refused "--threads: '0' is not an integer in [1, 1024]" --threads 0

small="--pool 16 --runs 4096,65536 --rounds 3 --threads 2"
# shellcheck disable=SC2086
"$bin" $small >"$tmp/out" 2>"$tmp/err"
code=$?
num='[0-9][0-9]*\.[0-9]'
pass=0
[ "$code" = 0 ] && grep -q '^bench_pool: a 16 MiB pool, 2 threads, 3 rounds, prefetching 4 KiB ahead; every pass summed to the pool.s sum$' "$tmp/out" &&
    grep -q "^8 MiB  *sequential  *$num  *$num  *1\.000x$" "$tmp/out" &&
    grep -q "^4 KiB  *shuffled  *$num  *$num  *${num}[0-9]*x$" "$tmp/out" &&
    grep -q "^64 KiB  *shuffled  *$num  *$num  *${num}[0-9]*x$" "$tmp/out" &&
    [ "$(wc -l <"$tmp/out")" = 5 ] && pass=1
result "$pass" "sequential and two shuffled run sizes, every pass checked: a row each" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"

# shellcheck disable=SC2086
"$bin" $small --plant >"$tmp/out" 2>"$tmp/err"
code=$?
pass=0
[ "$code" = 1 ] && [ ! -s "$tmp/out" ] &&
    grep -q '^bench_pool: a pass in runs of [0-9]* KiB summed [0-9]*, the pool.s runs [0-9]*: a run skipped or read twice$' "$tmp/err" &&
    pass=1
result "$pass" "a pass that skips a run (planted): stopped by the check, exit 1" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"
