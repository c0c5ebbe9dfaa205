#!/bin/sh
# The attnbench command line: every bad input is refused before any work with
# one line on stderr and its documented exit code; good input runs and passes.
bin=${1:?usage: test_cli.sh path/to/attnbench}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
n=0

result() {  # result OK DESCRIPTION [DIAGNOSTIC]
    n=$((n + 1))
    if [ "$1" = 1 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        [ -n "$3" ] && printf '%s\n' "$3" | sed 's/^/# /'
    fi
}

# refused CODE TEXT ARGS...: exit code CODE, stdout empty, one stderr line containing TEXT
refused() {
    want=$1 text=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    code=$?
    lines=$(wc -l <"$tmp/err")
    pass=0
    if [ "$code" = "$want" ] && [ ! -s "$tmp/out" ] && [ "$lines" = 1 ] &&
        grep -qF -- "$text" "$tmp/err"; then
        pass=1
    fi
    result "$pass" "refused ($want): $*" "exit $code, stderr: $(cat "$tmp/err"), stdout bytes: $(wc -c <"$tmp/out")"
}

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
refused 2 "--seq: '-5' is not an integer" --seq=-5
refused 2 "--seq: 'abc' is not an integer" --seq abc
refused 2 "--seq: '12x' is not an integer" --seq 12x
refused 2 "--seq: '' is not an integer" --seq=
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
refused 2 "--causal takes no value" --causal=yes
refused 2 "--kv-len: 5 is not in [0, 4]" --seq 4 --kv-len 5
refused 2 "--kv-len: 2 values for --batch 3" --batch 3 --kv-len 1,2
refused 2 "--kv-len: 'x' is not an integer" --kv-len 1,x
refused 3 "overflow size_t" --batch 65536 --heads 4096 --seq 16777216 --dk 4096
refused 3 "is available" --heads 4096 --seq 16777216 --dk 4096
refused 3 "is the --max-mem limit" --max-mem 1M

runs 0 "naive" --list
runs 0 "exit codes" --help
runs 0 "attnbench " --version
runs 0 "PASSED" --backend=naive --seq 64 --heads 2 --dk 16 --reps 2
runs 0 "GFLOP/s" --backend naive --seq=33 --seq-kv 40 --dk 8 --dv 12 --causal --batch 2 --kv-len 20,0 --reps 1
runs 0 "fill=extreme" --backend=all --seq 20 --dk 16 --fill extreme --reps 1
runs 0 "reference: 40 of 256 rows (seeded stratified sample)" --seq 32 --dk 8 --check-rows 40 --reps 1

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

echo "1..$n"
