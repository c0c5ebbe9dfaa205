#!/bin/sh
# The attnbench command line: every bad input is refused before any work with
# one line on stderr and its documented exit code; good input runs and passes.
bin=${1:?usage: test_cli.sh path/to/attnbench}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

# refused CODE TEXT ARGS...: tap.sh's refused_code (here every refusal names its code)
refused() { refused_code "$@"; }

# runs CODE TEXT ARGS...: exit code CODE and TEXT on stdout
runs() {
    want=$1 text=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    code=$?
    pass=0
    if [ "$code" = "$want" ] && grep -qF -- "$text" "$tmp/out"; then
        pass=1
    fi
    result "$pass" "runs ($want, '$text'): $*" "exit $code, stderr: $(cat "$tmp/err"), stdout: $(head -c 2000 "$tmp/out")"
}

refused 2 "--seq: '0' is not an integer in [1, 16777216]" --seq 0
refused 2 "--huge-pages: 'maybe' is not on or off" --huge-pages maybe
refused 2 "--seq: '-5' is not an integer" --seq=-5
refused 2 "--seq: 'abc' is not an integer" --seq abc
refused 2 "--seq: '12x' is not an integer" --seq 12x
refused 2 "--seq: empty item in ''" --seq=
refused 2 "--seq: ' 12' is not an integer" --seq " 12"
refused 2 "--seq: '99999999999999999999' is not an integer" --seq 99999999999999999999
refused 2 "--heads: '0' is not an integer in [1, 4096]" --heads 0
refused 2 "--batch: '-1' is not an integer in [1, 65536]" --batch -1
refused 2 "--dk: '1.5' is not an integer in [1, 4096]" --dk 1.5
refused 2 "--dv: '4097' is not an integer in [1, 4096]" --dv 4097
refused 2 "--seq-kv: '0' is not an integer" --seq-kv 0
refused 2 "--threads: '0' is not an integer in [1, 1024]" --threads 0
refused 2 "--seed: '-3' is not an integer" --seed -3
refused 2 "--scale: 'nan' is not a finite number" --scale nan
refused 2 "--fill: 'huge' is not one of: normal, extreme" --fill huge
refused 2 "--check-rows: '0' is not 'auto', 'all' or an integer >= 1" --check-rows 0
refused 2 "--max-mem: '0' is not a size" --max-mem 0
refused 2 "--max-mem: '8Q' is not a size" --max-mem 8Q
refused 2 "unknown backend 'nosuch' (known: naive" --backend=nosuch
refused 2 "unknown backend '' (known:" --backend=naive,
refused 2 "unknown option '--frobnicate'" --frobnicate
refused 2 "unknown option '--seq2'" --seq2=4
refused 2 "unexpected argument 'naive'" naive
refused 2 "--seq needs a value" --seq
refused 2 "--causal takes its value after '=': --causal=both, not '--causal both'" --causal both
refused 2 "--causal: 'maybe' is not one of: yes, no, both" --causal=maybe
# Score modifiers and presets: each bad value in one line.
refused 2 "--window: '-1' is not L or L,R" --window -1
refused 2 "--window: '8,' is not L or L,R" --window 8,
refused 2 "--window: '1,2,3' is not L or L,R" --window 1,2,3
refused 2 "--softcap: '0' is not a cap > 0" --softcap 0
refused 2 "--softcap: '-5' is not a finite number" --softcap -5
refused 2 "--v-from-k: dv 128 is wider than dk 64" --v-from-k --dk 64 --dv 128
refused 2 "--model: 'llama-9' is not a preset (known: llama-3.1-8b," --model llama-9
refused 2 "--heads: 30 is not a multiple of llama-3.1-8b's 8 K/V heads" --model llama-3.1-8b --heads 30
refused 2 "--check-output: the peers compute attention without score modifiers" --softcap 5 --check-output x.npy --peer p
"$bin" --model list >"$tmp/out" 2>&1
result "$(grep -q '^deepseek-v3-decode *128 *1 *576 *512 0.135' "$tmp/out" && grep -q 'source: mistralai/Mistral-7B-v0.1' "$tmp/out" && echo 1 || echo 0)" \
    "--model list: each preset with its fields and source" "$(head -6 "$tmp/out")"
"$bin" --model gemma-2-9b-local --backend=naive,linear --seq 3 --seq-kv 40 --heads 2 --kv-heads 1 --reps 0 --csv "$tmp/m.csv" >"$tmp/out" 2>&1
result "$(grep -q 'attn/naive/.*/window:4096.0/softcap:50/model:gemma-2-9b-local' "$tmp/m.csv" && grep -q 'linear does not compute the sliding window modifier (--window)' "$tmp/m.csv" && grep -q -- '--model gemma-2-9b-local --batch 1 --heads 2 --seq 3 --seq-kv 40 --dk 256 --dv 256 --kv-heads 1' "$tmp/out" && echo 1 || echo 0)" \
    "a preset under explicit heads: named, keyed, repro'd, and SKIPPED where a backend lacks its modifier" "$(tail -5 "$tmp/out")"
refused 2 "--list takes no value" --list=yes
refused 2 "--seq: range 256:16:x2 runs backwards" --seq 256:16:x2
refused 2 "--seq: range step 'x1' is not xF (F >= 2)" --seq 256:4096:x1
refused 2 "--seq: range step 'x0' is not xF" --seq 256:4096:x0
refused 2 "--seq: 'x0' is not an integer" --seq x0
refused 2 "--dk: range step '+0' is not xF (F >= 2) or +S (S >= 1)" --dk 16:64:+0
refused 2 "--seq: range '1:8' needs START:END:xFACTOR" --seq 1:8
refused 2 "--seq: '0' in a range is not an integer in [1, 16777216]" --seq 0:8:x2
refused 2 "--heads: empty item in '1,,2'" --heads 1,,2
refused 2 "--heads: empty item in '8,'" --heads 8,
refused 2 "--seq: more than 4096 values" --seq 1:5000:+1
refused 2 "--resume needs --csv FILE" --resume
refused 2 "--min-time: '0' is not a finite number" --min-time 0
refused 2 "--max-time: '-1' is not a finite number" --max-time -1
refused 2 "--case-timeout: '-1' is not a finite number in [0, 1e+06]" --case-timeout -1
refused 2 "--warmup: '0' is not an integer in [1, 1000]" --warmup 0
refused 2 "--reps: '101' is not an integer in [0, 100]" --reps 101
refused 2 "--tile: '64' is not BRxBC with both in [1, 4096]" --tile 64
refused 2 "--tile: '0x48' is not BRxBC" --tile 0x48
refused 2 "--tile: '64x' is not BRxBC" --tile 64x
refused 2 "--tile: '64x4097' is not BRxBC" --tile 64x4097
refused 2 "or BRxBCxSB with SB in [1, 8]" --tile 64x48x9
refused 2 "--tile: '64x48x4x1' is not BRxBC" --tile 64x48x4x1
refused 2 "--kv-heads: '0' is not an integer in [1, 4096]" --kv-heads 0
refused 2 "--kv-heads: 16 does not divide --heads 8" --heads 8 --kv-heads 16
refused 2 "--kv-heads: 3 does not divide --heads 8" --kv-heads 3
refused 2 "--kv-heads: 2 does not divide --heads 3" --heads 4,3 --kv-heads 2
refused 2 "--kv-heads: 'x' is not an integer" --kv-heads x
refused 2 "--splits: '0' is not 'auto' or an integer in [1, 1024]" --splits 0
refused 2 "--splits: '1025' is not 'auto' or an integer in [1, 1024]" --splits 1025
refused 2 "--splits: 'many' is not 'auto'" --splits many
printf 'schema,key,backend,verdict,reason,batch,heads,seq_q,seq_kv,d_k,d_v,causal,kv_len\n' >"$tmp/old.csv"
refused 2 "--shard: shard 3 of 3: need 0 <= I < N" --seq 8 --shard 3/3 --csv "$tmp/s.csv"
refused 2 "--shard: 'x' is not I/N" --seq 8 --shard x --csv "$tmp/s.csv"
refused 2 "--shard needs --csv FILE" --seq 8 --shard 0/2
refused 2 "--shard slurm: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT are not set" --seq 8 --shard slurm --csv "$tmp/s.csv"
refused 2 "not an attnbench CSV of schema 13 (its header differs)" --seq 8 --csv "$tmp/old.csv" --resume
if "$bin" --threads 2 --list >/dev/null 2>&1; then
    refused 2 "--pin: --threads 1024, but only" --pin --threads 1024
else
    skip "this build has no OpenMP, so --threads > 1 is refused first" "refused (2): --pin --threads 1024"
fi
refused 2 "--kv-len: 5 is not in [0, 4]" --seq 4 --kv-len 5
refused 2 "--kv-len: 5 is not in [0, 4]" --seq 4,64 --kv-len 5
refused 2 "--kv-len: 2 values for --batch list starting 2" --batch 2,3 --kv-len 1,2
refused 2 "--kv-len: 2 values for --batch 3" --batch 3 --kv-len 1,2
refused 2 "--kv-len: 'x' is not an integer" --kv-len 1,x
refused 3 "overflow size_t" --batch 65536 --heads 4096 --seq 16777216 --dk 4096
refused 3 "available" --heads 4096 --seq 16777216 --dk 4096
refused 3 "over --max-mem 1.0 MiB" --max-mem 1M

runs 0 "naive" --list
refused 2 "--device: '-1' is not an integer in [0, 255]" --device -1
refused 2 "--device: 'gpu' is not an integer in [0, 255]" --device gpu
if "$bin" --list 2>/dev/null | grep -q '^vulkan  *available'; then
    runs 0 "devices of vulkan, vulkan-3pass (--device N):" --list
    runs 0 "]; fp16 prefill: flash" --list
    runs 4 "vulkan: ERROR: vulkan: --device 255, but this machine has" --backend=vulkan --device 255 --seq 8 --heads 1 --reps 0
else
    why=$("$bin" --list 2>/dev/null | grep '^vulkan ' | sed 's/^vulkan  *//')
    skip "vulkan cannot run here: $why" "--list names the Vulkan devices"
    skip "vulkan cannot run here: $why" "--list says which kernel prefills fp16 on each device"
    skip "vulkan cannot run here: $why" "a --device past the last device is an ERROR naming the count"
fi
runs 0 "exit codes" --help
runs 0 "attnbench " --version
runs 0 "PASSED" --backend=naive --seq 64 --heads 2 --dk 16 --reps 2
runs 0 "GFLOP/s" --backend naive --seq=33 --seq-kv 40 --dk 8 --dv 12 --causal --batch 2 --kv-len 20,0 --reps 1
# Every backend but performer, whose fp32 features are not defined when the
# exponents span ~1e4 (README); it FAILS there, as the next line shows.
runs 0 "fill=extreme" --backend=naive,tiled,blas,onednn,vulkan,vulkan-3pass,local,sparse,linear,linformer --seq 20 --dk 16 --fill extreme --reps 1
runs 1 "performer~     FAILED" --backend=performer --seq 20 --dk 16 --fill extreme --reps 1
runs 0 "reference: 40 of 256 rows (seeded stratified sample)" --seq 32 --dk 8 --check-rows 40 --reps 1
runs 0 "12 cases run: 12 passed, 0 failed, 0 skipped, 0 errors" --backend=naive --seq 8:32:x2 --heads 1,2 --causal=both --dk 8 --reps 2 --min-time 0.001
runs 0 "== B=2 H=3 Nq=5 Nk=9 dk=4 dv=6 causal kv_len=7,7" --backend=naive --batch 2 --heads 3 --seq 5 --seq-kv 9 --dk 4 --dv 6 --causal=both --kv-len 7 --reps 1 --min-time 0.001 --seq 5,6
runs 0 "needs" --backend=naive --seq 8,16777216 --heads 1 --dk 4096 --reps 1 --min-time 0.001
runs 0 "1 passed, 0 failed, 1 skipped" --backend=naive --seq 8,16777216 --heads 1 --dk 4096 --reps 1 --min-time 0.001
runs 0 "tiled          PASSED" --backend=tiled --seq 100 --seq-kv 70 --dk 24 --dv 40 --causal --tile 16x20 --reps 1
runs 0 "--tile 16x20" --backend=tiled --seq 100 --dk 24 --tile 16x20 --reps 1
runs 0 "--tile 16x20x3 --threads" --backend=tiled --seq 100 --dk 24 --causal --tile 16x20x3 --reps 1
runs 0 "Hkv=2 Nq=1 Nk=300" --backend=naive,tiled,blas,onednn,local --heads 8 --kv-heads 2 --seq 1 --seq-kv 300 --dk 16 --reps 1
runs 0 "--seq-kv 300 --dk 16 --dv 16 --kv-heads 2" --backend=tiled --heads 8 --kv-heads 2 --seq 1 --seq-kv 300 --dk 16 --reps 1
runs 0 "--splits 3" --backend=tiled --heads 4 --kv-heads 1 --seq 2 --seq-kv 700 --dk 16 --splits 3 --causal --reps 1
refused 2 "--isa: 'neon' is not one of: auto, c, avx2, avx512" --isa neon
refused 2 "--check-output needs --peer NAME" --check-output o.npy
refused 2 "--peer needs its output (--check-output FILE.npy) or why it did not run" --peer mine
refused 2 "--peer: 'naive' is not a name of its own" --peer naive --peer-skip x
refused 2 "--check-output reports one peer's row: no --backend" --backend=naive --peer mine --peer-skip x
refused 2 "--peer needs one case, but the size options make 2 shapes" --peer mine --peer-skip x --seq 8,16
refused 2 "--check-output: /nonexistent/o.npy" --peer mine --check-output /nonexistent/o.npy --seq 8
runs 0 "--isa c" --backend=tiled,local --seq 100 --dk 24 --causal --isa c --reps 1
runs 0 "tiled (" --backend=tiled --seq 16 --dk 8 --reps 1
runs 0 "pinned to CPUs 0" --backend=naive --seq 8 --dk 8 --threads 1 --pin --reps 1

# The repro line printed for a case reruns that case alone, with the same result.
"$bin" --backend=naive --seq 48 --seq-kv 17 --heads 3 --dk 5 --dv 7 --causal --scale 0.3 --seed 9 --reps 1 >"$tmp/out" 2>&1
repro=$(sed -n 's/^  repro: //p' "$tmp/out" | head -n 1)
case "$repro" in
*"--backend=naive "*"--seq 48 --seq-kv 17 "*"--scale 0.3"*"--causal"*"--seed 9") ok=1 ;;
*) ok=0 ;;
esac
result "$ok" "repro names every setting of the case" "repro: $repro"
# shellcheck disable=SC2086  # the repro line is meant to be word-split
$repro --reps 1 >"$tmp/out2" 2>&1
code=$?
grep -q "^naive  *PASSED" "$tmp/out2"
result "$([ $code = 0 ] && [ $? = 0 ] && echo 1 || echo 0)" "the repro line reruns the case and passes" "$(cat "$tmp/out2")"

# attnbench arch: its own options, refused with one line each.
refused 2 "--dmodel 12: attention needs a multiple of 8" arch --dmodel 12
refused 2 "--models: unknown model 'lstm'" arch --models lstm
refused 2 "--attn-backend: linear computes linear attention, not softmax attention" arch --attn-backend linear
refused 2 "--attn-backend: unknown backend 'fast'" arch --attn-backend fast
refused 2 "--conv: 'fft' is not shift or im2col" arch --conv fft
refused 2 "--batch: '0' is not an integer in [1, 1048576]" arch --batch 0
refused 2 "unknown option '--bogus'" arch --bogus
refused 2 "unexpected argument 'rnn'" arch rnn
refused 2 "--seed: 'x' is not an integer" arch --seed x
refused 2 "--seq: '0' is not an integer" arch --seq 0
runs 0 "--attn-backend B" arch --help
runs 0 "log-log exponents against N" arch --batch 2 --dmodel 16 --seq 8,16 --reps 1 --min-time 0.001
runs 0 "cnn" arch --batch 2 --dmodel 12 --models rnn,cnn --seq 5 --reps 0
# Every arch row is checked against double and carries the command that reruns it alone.
"$bin" arch --batch 3 --dmodel 16 --seq 8,24 --reps 1 --min-time 0.001 --csv "$tmp/arch.csv" \
    >"$tmp/out" 2>"$tmp/err"
code=$?
rows=$(grep -c ',PASSED,' "$tmp/arch.csv")
repro=$(tail -n 1 "$tmp/arch.csv" | sed 's/.*,//')
result "$([ $code = 0 ] && [ "$rows" = 8 ] && echo 1 || echo 0)" \
    "arch: all 8 rows PASSED their check against double" "exit $code, $rows rows: $(cat "$tmp/arch.csv")"
case "$repro" in
*"arch --models mha --seq 24 --batch 3 --dmodel 16 --attn-backend tiled --threads"*) ok=1 ;;
*) ok=0 ;;
esac
# shellcheck disable=SC2086
[ "$ok" = 1 ] && $repro --reps 1 --min-time 0.001 >"$tmp/out2" 2>&1 && grep -q "^mha  *24 PASSED" "$tmp/out2" || ok=0
result "$ok" "arch: a row's repro reruns that model at that N alone, PASSED" "repro: $repro; $(cat "$tmp/out2" 2>/dev/null)"

# Storage types: refusals, the name and repro, and the comparison table.
refused 2 "--dtype: 'fp8' is not one of: fp32, bf16, fp16" --dtype fp8
refused 2 "--dtype: bf16 is given twice" --dtype bf16,fp32,bf16
refused 2 "--kv-dtype: '' is not one of" --kv-dtype=
refused 2 "--dtype: q4_0 is a quantized K/V cache type: give it to --kv-dtype (Q is fp32, bf16, fp16 or q8_0)" --dtype q4_0
refused 2 "--dtype q8_0 stores Q in blocks of 32 values along dk: --dk 48 is not a multiple of 32" --dtype q8_0 --kv-dtype fp32 --dk 48
refused 2 "--kv-dtype q4_0 stores K and V in blocks of 32 values along d: --dk 48 is not a multiple of 32" --kv-dtype fp8e4m3,q4_0 --dk 48
runs 0 "quantized K/V caches against bf16 K/V" --backend=naive,tiled --seq 8 --dk 32 --kv-dtype bf16,q8_0,q4_0,fp8e4m3,fp8e5m2 --reps 1
# A quantized cache is dumped as the values it reads back (not those before
# quantization): Q the same as fp32's dump, K not; read in again and
# quantized again, it is the same cache: its output's distance to the
# reference before quantization is its distance to its own reference.
"$bin" --seq 16 --dk 32 --dump-inputs "$tmp/d32" >/dev/null 2>&1 &&
    "$bin" --seq 16 --dk 32 --kv-dtype q8_0 --dump-inputs "$tmp/d8" >/dev/null 2>&1 &&
    cmp -s "$tmp/d32/q.npy" "$tmp/d8/q.npy" && ! cmp -s "$tmp/d32/k.npy" "$tmp/d8/k.npy"
code=$?
"$bin" --backend=naive --seq 16 --dk 32 --kv-dtype q8_0 --inputs "$tmp/d8" --reps 1 \
    --csv "$tmp/q8.csv" >"$tmp/out" 2>&1
ok=0
[ $code = 0 ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { exit !($c["verdict"] == "PASSED" && $c["quant_max_abs"] == $c["max_abs"] &&
             $c["quant_nmse"] == $c["nmse"]) }' "$tmp/q8.csv" && ok=1
result "$ok" \
    "--dump-inputs --kv-dtype q8_0 writes the cache read back; --inputs of it is the same cache" \
    "dumps: $code; $(cat "$tmp/out")"
runs 0 "--dtype bf16 --kv-dtype fp16" --backend=naive --seq 8 --dk 8 --dtype bf16 --kv-dtype fp16 --reps 1
refused 2 "--pass: 'back' is not one of: fwd, bwd, fwdbwd" --pass back
refused 2 "--pass: bwd is given twice" --pass bwd,fwd,bwd
"$bin" --pass bwd --seq 8 --dk 8 --dump-inputs "$tmp/di" >"$tmp/out" 2>&1
code=$?
result "$(yes_if test $code = 0 -a -s "$tmp/di/do.npy" -a -s "$tmp/di/q.npy")" \
    "--dump-inputs --pass bwd writes dO beside Q, K, V" "exit $code: $(cat "$tmp/out"; ls "$tmp/di" 2>&1)"
runs 0 "pass=bwd" --backend=naive,tiled --seq 8 --dk 8 --pass bwd --reps 1
runs 0 "local: SKIPPED: local computes the forward pass only (this case is --pass fwdbwd)" --backend=local,tiled --seq 8 --dk 8 --pass fwdbwd --reps 1 --isa c
runs 0 "bf16-storage" --backend=naive --seq 8 --dk 8 --dtype bf16 --reps 1
# A shape every backend refuses: each SKIPs with its reason, and the inputs
# and the double reference are never made (no reference line).
"$bin" --backend=local,linear --seq 4096 --dtype bf16 >"$tmp/out" 2>"$tmp/err"
code=$?
pass=0
if [ "$code" = 5 ] && grep -q "^local: SKIPPED: local computes from fp32 storage only" "$tmp/out" &&
    grep -q "^linear: SKIPPED" "$tmp/out" && ! grep -q "^reference:" "$tmp/out"; then
    pass=1
fi
result "$pass" "every backend refuses: SKIPPED with reasons, exit 5, no reference made" \
    "exit $code: $(cat "$tmp/out" "$tmp/err")"
"$bin" --backend=naive,tiled,blas --seq 40 --dk 24 --dtype fp32,bf16,fp16 --reps 1 --min-time 0.001 \
    --csv "$tmp/dt.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
ok=1
[ "$code" = 0 ] || ok=0
grep -q "^storage types against fp32" "$tmp/out" || ok=0
for be in naive tiled; do
    for dt in bf16 fp16; do
        grep -Eq "^$be +$dt +$dt .*x " "$tmp/out" || ok=0
        grep -q ",$be,PASSED,.*,$dt,$dt," "$tmp/dt.csv" || ok=0
    done
done
grep -q "/dtype:bf16/threads:" "$tmp/dt.csv" || ok=0
grep -q ",blas,SKIPPED,blas computes from fp32 storage only (this case stores Q in bf16)," \
    "$tmp/dt.csv" || ok=0
[ "$(grep -c ',PASSED,' "$tmp/dt.csv")" = 7 ] || ok=0
result "$ok" "--dtype fp32,bf16,fp16: naive and tiled PASS each (CSV dtype columns, /dtype: in the key), blas only fp32 and SKIPS the others with why, the table of speedups over fp32" \
    "exit $code: $(cat "$tmp/out") $(cat "$tmp/dt.csv")"
repro=$(grep ',tiled,PASSED,.*,bf16,bf16,' "$tmp/dt.csv" | sed 's/.*,//')
# shellcheck disable=SC2086
ok=0
case "$repro" in *"--dtype bf16"*) $repro --reps 1 >"$tmp/out2" 2>&1 && grep -q "^tiled  *PASSED" "$tmp/out2" && ok=1 ;; esac
result "$ok" "a bf16 row's repro carries --dtype bf16 and reruns it, PASSED" "repro: $repro; $(cat "$tmp/out2" 2>/dev/null)"

# Fault injection: every case's first allocation fails; each case is an
# ERROR row, the sweep goes on, the CSV stays whole, the exit code is 4.
rm -f "$tmp/fault.csv"
ATTN_FAIL_ALLOC=1 "$bin" --backend=naive,tiled --seq 16,32 --dk 8 --reps 1 --csv "$tmp/fault.csv" \
    >"$tmp/out" 2>"$tmp/err"
code=$?
rows=$(grep -c ',ERROR,prepare: out of memory (allocation 1 failed on purpose' "$tmp/fault.csv")
lines=$(wc -l <"$tmp/fault.csv")
result "$([ "$code" = 4 ] && [ "$rows" = 4 ] && [ "$lines" = 5 ] && grep -q '4 cases run: 0 passed, 0 failed, 0 skipped, 4 errors' "$tmp/out" && echo 1 || echo 0)" \
    "ATTN_FAIL_ALLOC=1: four ERROR rows, the sweep goes on, the CSV whole, exit 4" \
    "exit $code, rows $rows, lines $lines: $(cat "$tmp/fault.csv")"
ATTN_FAIL_ALLOC=abc "$bin" --seq 8 >"$tmp/out" 2>"$tmp/err"
code=$?
result "$([ "$code" = 2 ] && grep -qF "ATTN_FAIL_ALLOC: 'abc' is not an allocation number" "$tmp/err" && echo 1 || echo 0)" \
    "ATTN_FAIL_ALLOC=abc is refused" "exit $code, $(cat "$tmp/err")"

# Every output is tried before the first case: a path that cannot be
# written is refused with exit 2, one line, and nothing run (stdout empty).
noway=$tmp/no/such/folder
refused 2 "--json $noway/x.json: cannot be written: its folder $noway" --backend=naive --seq 8 --json "$noway/x.json"
refused 2 "--json $tmp: cannot be written: is a folder" --backend=naive --seq 8 --json "$tmp"
refused 2 "--dump-output $noway/o.npy: cannot be written" --backend=naive --seq 8 --dump-output "$noway/o.npy"
refused 2 "--dump-weights $noway/p.npy: cannot be written" --backend=naive --seq 8 --dump-weights "$noway/p.npy"
: >"$tmp/plain"
refused 2 "--dump-inputs $tmp/plain/in: $tmp/plain is not a folder" --seq 8 --dump-inputs "$tmp/plain/in"
refused 2 "--csv $noway/a.csv: cannot be written" arch --seq 8 --reps 1 --csv "$noway/a.csv"
refused 2 "--json $noway/a.json: cannot be written" arch --seq 8 --reps 1 --json "$noway/a.json"
# ... and none is left behind by the trial; --dump-inputs makes its folder.
"$bin" --backend=naive --seq 8 --reps 1 --json "$tmp/t.json" >/dev/null 2>&1
"$bin" --seq 8 --dump-inputs "$tmp/made/in" >/dev/null 2>&1
code=$?
left=$(ls -A "$tmp" | grep -c probe)
result "$([ "$code" = 0 ] && [ -f "$tmp/made/in/q.npy" ] && [ -f "$tmp/t.json" ] && [ "$left" = 0 ] && echo 1 || echo 0)" \
    "--dump-inputs makes its folder; the trial files are removed" "exit $code, probes left $left: $(ls -A "$tmp")"

# The one-case table is the last thing printed: after every case's details,
# with the variants marked (~) and their error against exact attention.
"$bin" --backend=naive,linear --seq 32 --dk 8 --reps 1 >"$tmp/out" 2>&1
last=$(grep -n '^backend  ' "$tmp/out" | cut -d: -f1)
repro=$(grep -n 'repro:' "$tmp/out" | tail -1 | cut -d: -f1)
result "$([ -n "$last" ] && [ -n "$repro" ] && [ "$last" -gt "$repro" ] &&
    grep -q '^linear~  *PASSED .* nmse [0-9.e+-]*  ' "$tmp/out" && grep -q '^naive  *PASSED .* exact  ' "$tmp/out" &&
    tail -3 "$tmp/out" | grep -q 'another function than softmax attention' && echo 1 || echo 0)" \
    "the table comes after the details; linear marked ~ with its nmse, naive exact" "$(cat "$tmp/out")"

# attnbench arch: every row's "vs cnn" is filled, the rnn's too.
"$bin" arch --seq 16 --reps 1 --min-time 0.001 --batch 2 --dmodel 32 >"$tmp/out" 2>&1
result "$(grep -q '^rnn  *16 PASSED .*[0-9]x ' "$tmp/out" && echo 1 || echo 0)" \
    "arch: the rnn row has its time against the cnn" "$(cat "$tmp/out")"

# Serving batches (docs/serving.md): the grammar and what it replaces.
refused 2 "--lens: 'decode:uniform:10' is not" --lens decode:uniform:10
refused 2 "--lens: 'prefill:uniform:9:3': LO 9 is above HI 3" --lens prefill:uniform:9:3
refused 2 "no --seq or --seq-kv with it" --lens 1:10 --seq 4
refused 2 "--kv-len pads dense batches" --lens 1:10,1:20 --kv-len 5
refused 2 "--lens: 2 pairs for --batch 3" --lens 1:10,1:20 --batch 3
refused 2 "causal needs Nq <= Nk" --lens 9:4 --causal
refused 2 "--page: '2000' is not an integer in [0, 1024]" --page 2000
refused 2 "hold dense batches only" --page 16 --dump-weights "$tmp/dd.npy"
refused 2 "runs the forward only" --lens 1:10 --pass bwd
runs 0 "tiled          PASSED" --backend naive,tiled --heads 4 --kv-heads 2 --dk 32 \
    --lens 1:100,3:50,7:7 --page 0,16 --causal --reps 1 --min-time 0.001
"$bin" --backend tiled --heads 4 --kv-heads 2 --dk 32 --dv 16 --lens 1:100,3:50,7:7 --page 16 \
    --reps 0 --dump-output "$tmp/serving-o.npy" >"$tmp/out" 2>&1
result "$(head -c 128 "$tmp/serving-o.npy" | grep -aq "'shape': (11, 4, 16)" && echo 1 || echo 0)" \
    "--dump-output of a serving batch writes O as stored, [Tq, H, dv] = [11, 4, 16]" \
    "$(head -c 128 "$tmp/serving-o.npy" | tr -d '\0'; cat "$tmp/out")"

# A serving batch's inputs, packed: written by --dump-inputs with its
# offsets, the same keys whatever the page size (the fill follows the
# packed layout), read back by --inputs to the same output bit for bit,
# and files of another batch refused.
sv="--heads 4 --kv-heads 2 --dk 32 --dv 16 --lens 1:100,3:50,7:7 --causal --reps 0"
"$bin" $sv --page 16 --dump-inputs "$tmp/sv16" >"$tmp/out" 2>&1 &&
    "$bin" $sv --dump-inputs "$tmp/sv0" >>"$tmp/out" 2>&1
code=$?
ok=0
[ $code = 0 ] && head -c 128 "$tmp/sv16/k.npy" | grep -aq "'shape': (157, 2, 32)" &&
    head -c 128 "$tmp/sv16/q.npy" | grep -aq "'shape': (11, 4, 32)" &&
    head -c 128 "$tmp/sv16/cu_seqlens_k.npy" | grep -aq "'descr': '<i4'.*'shape': (4,)" &&
    cmp -s "$tmp/sv16/k.npy" "$tmp/sv0/k.npy" && cmp -s "$tmp/sv16/v.npy" "$tmp/sv0/v.npy" &&
    cmp -s "$tmp/sv16/cu_seqlens_q.npy" "$tmp/sv0/cu_seqlens_q.npy" && ok=1
result "$ok" "--dump-inputs of a serving batch: q [11,4,32], k [157,2,32], int32 cu_seqlens; \
pages of 16 and packed hold the same keys" "exit $code: $(cat "$tmp/out"; ls "$tmp/sv16" 2>&1)"
"$bin" --backend tiled $sv --page 16 --dump-output "$tmp/svf.npy" >"$tmp/out" 2>&1 &&
    "$bin" --backend tiled --lens 1:100,3:50,7:7 --causal --reps 0 --page 16 \
        --inputs "$tmp/sv16" --dump-output "$tmp/svi.npy" >>"$tmp/out" 2>&1
code=$?
result "$([ $code = 0 ] && [ "$(grep -c 'tiled: PASSED' "$tmp/out")" = 2 ] &&
    cmp -s "$tmp/svf.npy" "$tmp/svi.npy" && echo 1 || echo 0)" \
    "--inputs of a dumped serving batch PASSES with the same output bit for bit" \
    "exit $code: $(cat "$tmp/out")"
# A quantized pool: dumped as the values it reads back; read in again and
# quantized again, the same cache (its error against the values before
# quantization is its error against its own reference).
"$bin" $sv --dv 32 --page 16 --kv-dtype q8_0 --dump-inputs "$tmp/svq" >"$tmp/out" 2>&1 &&
    "$bin" --backend naive,tiled --lens 1:100,3:50,7:7 --causal --reps 1 --min-time 0.001 \
        --page 16 --kv-dtype q8_0 --inputs "$tmp/svq" --csv "$tmp/svq.csv" >>"$tmp/out" 2>&1
code=$?
ok=0
# (the lens field, quoted, holds commas: emptied before the split)
[ $code = 0 ] && ! cmp -s "$tmp/svq/k.npy" "$tmp/sv16/k.npy" &&
    sed 's/"[^"]*"//g' "$tmp/svq.csv" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { n++; if (!($c["verdict"] == "PASSED" && $c["quant_max_abs"] == $c["max_abs"] &&
                     $c["page"] == 16)) bad = 1 }
        END { exit bad || n != 2 }' && ok=1
result "$ok" "a paged q8_0 serving batch: --dump-inputs writes the cache read back, --inputs \
of it is the same cache (naive and tiled PASS)" "exit $code: $(cat "$tmp/out")"
refused 2 "q.npy is [T,H,d], a serving batch packed: give its lengths with --lens" \
    --inputs "$tmp/sv16"
refused 2 "q.npy is [B,H,N,d], a dense batch" --inputs "$tmp/d32" --lens 16:16
refused 2 "cu_seqlens_q.npy: offset 2 is 4 where the lengths of --lens put 5" \
    --inputs "$tmp/sv16" --lens 1:100,4:50,6:7 --reps 0
refused 2 "cu_seqlens_k.npy: offset 3 is 157 where the lengths of --lens put 158" \
    --inputs "$tmp/sv16" --lens 1:100,3:50,7:8 --reps 0

# --fma-probe: both probes of the case on its details line, the faster in
# the CSV's probe_gflops and peak_gflops (where a peak is known).
rm -f "$tmp/fp.csv"
"$bin" --backend=naive --seq 16 --dk 8 --reps 2 --fma-probe --csv "$tmp/fp.csv" >"$tmp/out" 2>&1
code=$?
# probe_gflops and peak_gflops by the header's names (peak_gflops is empty
# where no peak was measured).
cols=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
                NR == 2 { print $c["probe_gflops"], $c["peak_gflops"] }' "$tmp/fp.csv")
best=$(sed -n 's/.*FMA probe: \([0-9.]*\) GFLOP\/s before the timed runs, \([0-9.]*\) after.*/\1 \2/p' \
    "$tmp/out" | awk '{ print ($1 > $2 ? $1 : $2) }')
ok=$(echo "$cols $best" | awk 'NF >= 2 && $NF > 0 {
    got = $1; best = $NF; peak = (NF == 3 ? $2 : got)
    d = got - best; if (d < 0) d = -d; e = peak - got; if (e < 0) e = -e
    print (d <= 0.05 + 1e-3 * best && e <= 1e-3 * got ? 1 : 0); next } { print 0 }')
result "$([ "$code" = 0 ] && [ "$ok" = 1 ] && echo 1 || echo 0)" \
    "--fma-probe: the details show both probes, probe_gflops holds the faster, peak_gflops is it" \
    "exit $code: $(grep -i probe "$tmp/out"; tail -1 "$tmp/fp.csv" | cut -c1-200)"
# --help carries the card's three usages.
"$bin" --help >"$tmp/out"
result "$(grep -q 'attnbench --backend=vulkan --seq 4096' "$tmp/out" && grep -q -- '--resume finishes it' "$tmp/out" && echo 1 || echo 0)" \
    "--help has examples" "$(tail -15 "$tmp/out")"

echo "1..$n"
