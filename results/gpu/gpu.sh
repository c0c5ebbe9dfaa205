#!/usr/bin/env bash
# One device call: test_vulkan with decode.comp; decoding with the build
# before it (attnbench-old: flash.comp) and with it (attnbench), alternating
# over 2 rounds; a --splits sweep of decode.comp; then scripts/results-gpu,
# test_nonfinite and test_backends with the new build. All into /tmp/r,
# packed into $OUT/r.tar.gz after each step.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
r=/tmp/r; mkdir -p $r/ab
pack() { tar -C /tmp -czf "$OUT/r.tar.gz" r; }
q='--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv'
nvidia-smi $q > $r/nvidia-smi.log 2>&1
lscpu | grep -E 'Model name|^CPU\(s\)' > $r/host.log
(. /etc/os-release; echo "$PRETTY_NAME") >> $r/host.log
step() { echo "$1 rc=$2 in $(($SECONDS - $3)) s" | tee -a $r/steps.log; }
t0=$SECONDS; timeout 60 .gl/tests/test_vulkan > $r/test_vulkan.tap 2>&1
step "test_vulkan ($(grep -c '^not ok' $r/test_vulkan.tap) not ok)" $? $t0
pack
common=(--threads 16 --reps 5 --min-time 0.1 --max-time 5 --seed 1 --check-rows 256
        --case-timeout 60)
t0=$SECONDS
for round in 1 2; do
    for exe in old new; do
        bin=.gl/attnbench; [ $exe = old ] && bin=.gl/attnbench-old
        for shape in "--batch 1,8 --heads 32 --seq 1 --seq-kv 4096,32768 --dk 128 --dtype fp16" \
                     "--batch 1 --heads 32 --kv-heads 8,1 --seq 1 --seq-kv 32768 --dk 128 --dtype fp16,fp32"; do
            echo "+ $bin --backend=vulkan $shape ${common[*]} --csv $r/ab/$exe-$round.csv --resume" >> $r/ab/commands.txt
            timeout 100 $bin --backend=vulkan $shape "${common[@]}" --csv $r/ab/$exe-$round.csv \
                --resume >> $r/ab/$exe.log 2>&1 || echo "exit $? $exe $round" >> $r/ab/errors.log
        done
    done
done
step ab 0 $t0
pack
t0=$SECONDS
for s in 8 16 32 64; do
    echo "+ .gl/attnbench --backend=vulkan --batch 1 --heads 32 --kv-heads 32,8 --seq 1 --seq-kv 32768 --dk 128 --dtype fp16 --splits $s ${common[*]} --csv $r/ab/splits.csv --resume" >> $r/ab/commands.txt
    timeout 60 .gl/attnbench --backend=vulkan --batch 1 --heads 32 --kv-heads 32,8 --seq 1 \
        --seq-kv 32768 --dk 128 --dtype fp16 --splits $s "${common[@]}" --csv $r/ab/splits.csv \
        --resume >> $r/ab/splits.log 2>&1 || echo "exit $? splits $s" >> $r/ab/errors.log
done
step splits 0 $t0
pack
if grep -q '^not ok' $r/test_vulkan.tap; then echo "test_vulkan failed: stop"; exit 1; fi
t0=$SECONDS
ATTNBENCH=.gl/attnbench PYTHON=python3 THREADS=16 OUT=$r timeout 340 scripts/results-gpu \
    > $r/results-gpu.out 2>&1
step results-gpu $? $t0
pack
for t in test_nonfinite test_backends; do
    t0=$SECONDS; timeout 60 .gl/tests/$t > $r/$t.tap 2>&1
    step "$t ($(grep -c '^not ok' $r/$t.tap) not ok)" $? $t0
done
nvidia-smi $q >> $r/nvidia-smi.log 2>&1
pack
grep -A8 '^Decoding' $r/tables.md
cat $r/steps.log $r/ab/errors.log 2>/dev/null
