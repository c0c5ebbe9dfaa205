#!/usr/bin/env bash
# Second device call: the torch-sdpa-cuda decoding rows that the first
# call's scripts/results-gpu missed (its peers call took one --dtype at a
# time), appended to the first call's gpu.csv with --resume, then tables.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
r=/tmp/r; mkdir -p $r; cp .gl/gpu.csv $r/gpu.csv
t0=$SECONDS
for dt in fp16 bf16; do
    c=(python3 scripts/peers.py --attnbench .gl/attnbench --device cuda --backend torch-sdpa
       --batch 1,8 --heads 32 --kv-heads 32,8 --seq 1 --seq-kv 4096,32768 --dk 128
       --dtype $dt --threads 16 --reps 5 --min-time 0.1 --max-time 5 --seed 1
       --check-rows 256 --csv $r/gpu.csv --resume)
    echo "+ ${c[*]}" >> $r/commands2.txt
    timeout 75 "${c[@]}" >> $r/peers2.log 2>&1; echo "$dt rc=$? at $((SECONDS - t0)) s" >> $r/steps2.log
    cp $r/gpu.csv $r/peers2.log $r/steps2.log $r/commands2.txt "$OUT"/
done
python3 scripts/gpu_tables.py $r/gpu.csv > $OUT/tables.md 2>&1
cat $r/steps2.log; grep -A20 '^Decoding' $OUT/tables.md
