#!/usr/bin/env bash
# One device call: test_vulkan with flash_cm.comp staging K, V, Q and P as
# words; fp16 prefill with the build of coopmat-ab (attnbench-old) and this
# one (attnbench), alternating over 2 rounds; then test_backends. All into
# /tmp/r, packed into $OUT/r.tar.gz after each step.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
r=/tmp/r; mkdir -p $r
pack() { tar -C /tmp -czf "$OUT/r.tar.gz" r; }
q='--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv'
nvidia-smi $q > $r/nvidia-smi.log 2>&1
step() { echo "$1 in $(($SECONDS - $2)) s" | tee -a $r/steps.log; }
t0=$SECONDS; timeout 60 .gl/tests/test_vulkan > $r/test_vulkan.tap 2>&1
step "test_vulkan: $(grep -c '^not ok' $r/test_vulkan.tap) not ok" $t0
grep -E 'flash_cm|^not ok|^#' $r/test_vulkan.tap | head -20
pack
if grep -q '^not ok' $r/test_vulkan.tap; then exit 1; fi
common=(--threads 16 --reps 5 --min-time 0.1 --max-time 3 --seed 1 --check-rows 256
        --case-timeout 60)
shapes=("--batch 1 --heads 8 --seq 1024:16384:x2 --dk 128 --causal=both --dtype fp16"
        "--batch 4 --heads 32 --kv-heads 8 --seq 4096 --dk 128 --causal=both --dtype fp16")
t0=$SECONDS
for round in 1 2; do
    for exe in old new; do
        bin=.gl/attnbench; [ $exe = old ] && bin=.gl/attnbench-old
        for shape in "${shapes[@]}"; do
            echo "+ $bin --backend=vulkan $shape ${common[*]} --csv $r/$exe-$round.csv --resume" >> $r/commands.txt
            timeout 60 $bin --backend=vulkan $shape "${common[@]}" --csv $r/$exe-$round.csv \
                --resume >> $r/$exe.log 2>&1 || echo "exit $? $exe $round" >> $r/errors.log
        done
        step "$exe round $round" $t0
        pack
    done
done
t0=$SECONDS; timeout 60 .gl/tests/test_backends > $r/test_backends.tap 2>&1
step "test_backends: $(grep -c '^not ok' $r/test_backends.tap) not ok" $t0
pack
grep -hE '^vulkan ' $r/new.log | head -12
cat $r/steps.log $r/errors.log 2>/dev/null
