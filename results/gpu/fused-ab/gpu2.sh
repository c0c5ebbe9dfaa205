#!/usr/bin/env bash
# One device call: variants (ab.sh), the winner's test_vulkan, then the
# winner (vulkan, vulkan-3pass) and the old build (vulkan) over
# scripts/results-gpu's shapes, alternating, into /tmp/ab.
set -u
if command -v nvidia-smi >/dev/null; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
o=/tmp/ab
mkdir -p $o
q='--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv'
nvidia-smi $q > $o/nvidia-smi.log
lscpu | grep -E 'Model name|^CPU\(s\)' > $o/host.log
.gl/attnbench --list > $o/list.log 2>&1
timeout ${GPU2_AB_S:-120} bash .gl/ab.sh $o > $o/ab.txt 2>&1
echo "ab rc=$?" >> $o/ab.txt
W=$(sed -n 's/^WINNER //p' $o/ab.txt)
[ -n "$W" ] || W=wg64
exe=.gl/attnbench; tv=.gl/tests/test_vulkan
if [ "$W" != wg64 ]; then exe=.gl/attnbench-$W; tv=.gl/tests/test_vulkan-$W; fi
echo "winner $W" >> $o/ab.txt
timeout 25 $tv > $o/test_vulkan.tap 2>&1
echo "test rc=$?" >> $o/ab.txt
common=(--threads 16 --reps 5 --min-time 0.1 --max-time 5 --seed 1 --check-rows 256
        --case-timeout 120)
prefill=(--batch 1 --heads 8 --seq 1024:16384:x2 --dk 64,128 --causal=both)
decode=(--batch 1,8 --heads 32 --seq 1 --seq-kv 4096,32768 --dk 128)
run() {  # run CSV ARGS...
    local csv=$1; shift
    echo "+ $* ${common[*]} --csv $o/$csv --resume" >> $o/full-commands.txt
    timeout 100 "$@" "${common[@]}" --csv $o/$csv --resume >> $o/full.log 2>&1 ||
        echo "exit $?: $*" >> $o/full-errors.log
}
end=$((SECONDS + ${GPU2_FULL_S:-190}))
for set in fp32 fp16 dec; do
    if [ $set = dec ]; then a=("${decode[@]}" --dtype fp16); else a=("${prefill[@]}" --dtype $set); fi
    [ $SECONDS -lt $end ] && run full-new.csv $exe --backend=vulkan,vulkan-3pass "${a[@]}"
    [ $SECONDS -lt $end ] && run full-old.csv .gl/attnbench-old --backend=vulkan "${a[@]}"
done
nvidia-smi $q >> $o/nvidia-smi.log
cat $o/ab.txt
grep -v '^ok' $o/test_vulkan.tap | head
cat $o/full-errors.log 2>/dev/null
grep -c PASSED $o/full-new.csv $o/full-old.csv
