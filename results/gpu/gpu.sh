#!/usr/bin/env bash
# One device call: scripts/results-gpu with the current build, then the
# Vulkan tests, then a --splits sweep of decoding; all into /tmp/r, packed
# into $OUT/r.tar.gz at the end (and whenever a step ends).
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
r=/tmp/r; mkdir -p $r
pack() { tar -C /tmp -czf "$OUT/r.tar.gz" r; }
q='--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv'
nvidia-smi $q > $r/nvidia-smi.log 2>&1
lscpu | grep -E 'Model name|^CPU\(s\)' > $r/host.log
(. /etc/os-release; echo "$PRETTY_NAME") >> $r/host.log
t0=$SECONDS
ATTNBENCH=.gl/attnbench PYTHON=python3 THREADS=16 OUT=$r timeout 330 scripts/results-gpu \
    > $r/results-gpu.out 2>&1
echo "results-gpu rc=$? in $((SECONDS - t0)) s" | tee -a $r/steps.log
pack
for t in test_vulkan test_nonfinite test_backends; do
    t0=$SECONDS
    timeout 80 .gl/tests/$t > $r/$t.tap 2>&1
    echo "$t rc=$? in $((SECONDS - t0)) s; not ok: $(grep -c '^not ok' $r/$t.tap)" \
        | tee -a $r/steps.log
done
pack
nvidia-smi $q >> $r/nvidia-smi.log 2>&1
t0=$SECONDS
for s in 1 8 32 64; do
    echo "+ .gl/attnbench --backend=vulkan --batch 1 --heads 32 --kv-heads 32,8 --seq 1 --seq-kv 32768 --dk 128 --dtype fp16 --splits $s --threads 16 --reps 5 --min-time 0.1 --max-time 5 --seed 1 --check-rows 256 --csv $r/splits.csv --resume" >> $r/splits-commands.txt
    timeout 40 .gl/attnbench --backend=vulkan --batch 1 --heads 32 --kv-heads 32,8 --seq 1 \
        --seq-kv 32768 --dk 128 --dtype fp16 --splits $s --threads 16 --reps 5 --min-time 0.1 \
        --max-time 5 --seed 1 --check-rows 256 --csv $r/splits.csv --resume >> $r/splits.log 2>&1
    echo "splits $s rc=$?" >> $r/steps.log
done
echo "splits in $((SECONDS - t0)) s" | tee -a $r/steps.log
pack
tail -40 $r/tables.md
cat $r/steps.log
