#!/usr/bin/env bash
# The fused vulkan kernel before and after, on one GPU in one run: the
# previous build (attnbench-old) and the new one at 64 (attnbench), 128 and
# 256 invocations per workgroup; then the new one's split-KV chunk counts on
# the decoding cases. Every case is checked (PASSED) as in any run.
set -u
out=$1
mkdir -p "$out"
common=(--backend=vulkan --threads 16 --reps 5 --min-time 0.1 --max-time 5 --seed 1
        --check-rows 64 --case-timeout 60)
pre=(--batch 1 --heads 8 --seq 1024,4096 --dk 64,128 --dtype fp32)
pre16=(--batch 1 --heads 8 --seq 4096 --dk 128 --causal=yes --dtype fp16)
dec=(--batch 1,8 --heads 32 --seq 1 --seq-kv 4096,32768 --dk 128 --dtype fp16)
exe() { [ "$1" = wg64 ] && echo .gl/attnbench || echo ".gl/attnbench-$1"; }
for set in pre pre16 dec; do
    declare -n args=$set
    for b in old wg64 wg128 wg256; do
        echo "+ $(exe $b) ${common[*]} ${args[*]} --csv $out/$b.csv --resume" >>"$out/commands.txt"
        "$(exe $b)" "${common[@]}" "${args[@]}" --csv "$out/$b.csv" --resume >>"$out/$b.log" 2>&1 ||
            echo "$b $set: exit $?" >>"$out/errors.log"
    done
done
for sp in 1 4 16 64; do
    echo "+ .gl/attnbench ${common[*]} ${dec[*]} --splits $sp --csv $out/splits$sp.csv" \
        >>"$out/commands.txt"
    .gl/attnbench "${common[@]}" "${dec[@]}" --splits $sp --csv "$out/splits$sp.csv" \
        >>"$out/splits.log" 2>&1 || echo "splits $sp: exit $?" >>"$out/errors.log"
done
python3 .gl/ab.py "$out"
