#!/bin/sh
# attnbench under mpirun: ring and tiled side by side with ring's per-rank
# figures, the CSV's rank columns and the repro's mpirun; a rank that fails
# prepare ends in ERROR on every rank within a bounded time; ranks started
# with different command lines are refused; --case-timeout is refused.
bin=${1:?usage: test_ring_cli.sh attnbench [mpirun]}
mpirun=${2:-}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

if [ -z "$mpirun" ]; then
    skip "this build has no MPI, or mpirun was not found (Debian: libopenmpi-dev openmpi-bin)" \
        "attnbench under mpirun"
    echo "1..$n"
    exit 0
fi

# Column $2 of CSV $1's first row, by its name in the header.
col() { awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
                              NR == 2 { print $c }' "$1"; }

quick="--reps 2 --min-time 0.001"
timeout 120 "$mpirun" -n 2 "$bin" --backend=ring,tiled --seq 256 --heads 2 --dk 32 $quick \
    >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 0 ] && [ "$(grep -c ': PASSED' "$tmp/out")" = 2 ]; then echo 1; else echo 0; fi)" \
    "mpirun -n 2: ring and tiled both PASS" "exit $code: $(cat "$tmp/out" "$tmp/err")"
result "$(if grep -q 'ranks: 2,' "$tmp/out" && grep -q 'rank 1: compute .*, waiting for K/V .*, sent .*, workspace' "$tmp/out"; then echo 1; else echo 0; fi)" \
    "ring reports each rank's compute, communication, bytes sent and workspace" "$(cat "$tmp/out")"
result "$(yes_if grep -q 'repro: mpirun -n 2 .* --backend=ring ' "$tmp/out")" \
    "ring's repro line starts with mpirun -n 2" "$(grep repro "$tmp/out")"

timeout 120 "$mpirun" -n 3 "$bin" --backend=ring --seq 100 --seq-kv 7 --heads 2 --dk 16 $quick \
    --csv "$tmp/r.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 0 ] && [ "$(col "$tmp/r.csv" ranks)" = 3 ] && [ "$(col "$tmp/r.csv" rank_sent_bytes)" -gt 0 ] && [ "$(col "$tmp/r.csv" rank_workspace_bytes)" -gt 0 ] && grep -q '/ranks:3' "$tmp/r.csv"; then echo 1; else echo 0; fi)" \
    "mpirun -n 3 with 7 keys: the CSV row names 3 ranks, the bytes each sent and its workspace" \
    "exit $code: $(cat "$tmp/err" "$tmp/r.csv")"

# A rank that fails prepare: every rank says ERROR and all exit, well
# before the 120 s limit.
t0=$(date +%s)
ATTN_RING_FAIL_RANK=1 timeout 120 "$mpirun" -x ATTN_RING_FAIL_RANK -n 3 "$bin" --backend=ring,naive \
    --seq 64 --heads 2 --dk 16 $quick >"$tmp/out" 2>"$tmp/err"
code=$?
t1=$(date +%s)
result "$(if [ $code != 124 ] && [ $code != 0 ] && grep -q 'ring .*ERROR' "$tmp/out" && grep -q 'naive: PASSED' "$tmp/out"; then echo 1; else echo 0; fi)" \
    "rank 1 failing prepare makes the case an ERROR on rank 0, and the run goes on to naive ($((t1 - t0)) s)" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"
result "$(if grep -q 'rank 0 of 3: ring: ERROR: rank 1 failed prepare' "$tmp/err" && grep -q 'rank 1 of 3: ring: ERROR: rank 1 failed prepare' "$tmp/err" && grep -q 'rank 2 of 3: ring: ERROR: rank 1 failed prepare' "$tmp/err"; then echo 1; else echo 0; fi)" \
    "every rank reports the ERROR, naming the rank that failed" "$(cat "$tmp/err")"

timeout 120 "$mpirun" -n 2 sh -c 'exec "$0" --backend=ring --seq $((64 + OMPI_COMM_WORLD_RANK)) --reps 2' \
    "$bin" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 2 ] && grep -q 'started with different command lines' "$tmp/err" && ! grep -q PASSED "$tmp/out"; then echo 1; else echo 0; fi)" \
    "ranks started with different command lines are refused, and nothing runs" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"

timeout 120 "$mpirun" -n 2 "$bin" --backend=ring --seq 64 --case-timeout 10 >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 2 ] && grep -q 'MPI processes cannot fork' "$tmp/err"; then echo 1; else echo 0; fi)" \
    "--case-timeout is refused under mpirun" "exit $code: $(cat "$tmp/err")"

# Without mpirun the ring is one rank, and says so.
"$bin" --backend=ring --seq 64 --heads 2 --dk 16 $quick >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 0 ] && grep -q 'ranks: 1,' "$tmp/out" && grep -q 'ring (Open MPI.*1 rank)' "$tmp/out"; then echo 1; else echo 0; fi)" \
    "without mpirun, ring runs as one rank and PASSES" "exit $code: $(cat "$tmp/out" "$tmp/err")"

echo "1..$n"
