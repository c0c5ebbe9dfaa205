#!/usr/bin/env bash
# One device call: test_vulkan with flash_cm.comp; fp16 prefill with the
# build before it (attnbench-old: flash.comp) and with it (attnbench),
# alternating over 2 rounds; torch-sdpa-cuda on the same shapes; then
# test_nonfinite and test_backends. All into /tmp/r, packed into
# $OUT/r.tar.gz after each step.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
r=/tmp/r; mkdir -p $r
pack() { tar -C /tmp -czf "$OUT/r.tar.gz" r; }
q='--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv'
nvidia-smi $q > $r/nvidia-smi.log 2>&1
lscpu | grep -E 'Model name|^CPU\(s\)' > $r/host.log
(. /etc/os-release; echo "$PRETTY_NAME") >> $r/host.log
step() { echo "$1 rc=$2 in $(($SECONDS - $3)) s" | tee -a $r/steps.log; }
t0=$SECONDS; timeout 90 .gl/tests/test_vulkan > $r/test_vulkan.tap 2>&1
step "test_vulkan ($(grep -c '^not ok' $r/test_vulkan.tap) not ok)" $? $t0
grep -E 'flash_cm|^not ok|^#' $r/test_vulkan.tap | head -40
if grep -q '^not ok' $r/test_vulkan.tap; then
    for n in 64 256; do
        for exe in old new; do
            bin=.gl/attnbench; [ $exe = old ] && bin=.gl/attnbench-old
            $bin --backend=vulkan --dtype fp16 --heads 1 --seq $n --dk 64 --reps 1 \
                --dump-output $r/$exe-$n.npy >> $r/dbg.log 2>&1
        done
    done
    python3 .gl/dbg.py $r 64 256 2>&1 | tee $r/dbg.txt
    pack
    exit 1
fi
pack
common=(--threads 16 --reps 5 --min-time 0.1 --max-time 3 --seed 1 --check-rows 256
        --case-timeout 60)
shapes=("--batch 1 --heads 8 --seq 1024:16384:x2 --dk 64,128 --causal=both --dtype fp16"
        "--batch 4 --heads 32 --kv-heads 8 --seq 4096 --dk 128 --causal=both --dtype fp16")
t0=$SECONDS
for round in 1 2; do
    for exe in old new; do
        bin=.gl/attnbench; [ $exe = old ] && bin=.gl/attnbench-old
        for shape in "${shapes[@]}"; do
            echo "+ $bin --backend=vulkan $shape ${common[*]} --csv $r/$exe-$round.csv --resume" >> $r/commands.txt
            timeout 120 $bin --backend=vulkan $shape "${common[@]}" --csv $r/$exe-$round.csv \
                --resume >> $r/$exe.log 2>&1 || echo "exit $? $exe $round" >> $r/errors.log
        done
        step "$exe round $round" 0 $t0
        pack
    done
done
t0=$SECONDS
for shape in "${shapes[@]}"; do
    c=(python3 scripts/peers.py --attnbench .gl/attnbench --device cuda --backend torch-sdpa
       $shape "${common[@]:0:12}" --csv $r/torch.csv --resume)
    echo "+ ${c[*]}" >> $r/commands.txt
    timeout 100 "${c[@]}" >> $r/peers.log 2>&1 || echo "exit $? torch" >> $r/errors.log
done
step torch 0 $t0
pack
for t in test_nonfinite test_backends; do
    t0=$SECONDS; timeout 60 .gl/tests/$t > $r/$t.tap 2>&1
    step "$t ($(grep -c '^not ok' $r/$t.tap) not ok)" $? $t0
done
nvidia-smi $q >> $r/nvidia-smi.log 2>&1
pack
grep -hE '^vulkan ' $r/new.log | head -30
cat $r/steps.log $r/errors.log 2>/dev/null
