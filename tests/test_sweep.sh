#!/bin/sh
# Sweeps end to end: the CSV and the Google-Benchmark-shaped JSON, compare.py
# reading that JSON, and --resume after an interrupted run (a torn last row,
# SIGTERM and SIGKILL) finishing the sweep with no lost and no duplicated row.
bin=${1:?usage: test_sweep.sh attnbench python3 [compare.py]}
py=${2:?}
compare=${3:-}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

# The key column of every row, sorted; and how many rows repeat a key.
keys() { tail -n +2 "$1" | cut -d, -f2 | sort; }
dups() { keys "$1" | uniq -d | wc -l; }
rows() { tail -n +2 "$1" | wc -l; }

args="--backend=naive --seq 8:64:x2 --heads 1,2 --dk 8 --reps 3 --min-time 0.001"
"$bin" $args --csv "$tmp/full.csv" --json "$tmp/full.json" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(yes_if [ $code = 0 ])" "a sweep of 8 cases writes CSV and JSON" "exit $code: $(cat "$tmp/err")"
result "$(if [ "$(rows "$tmp/full.csv")" = 8 ] && [ "$(dups "$tmp/full.csv")" = 0 ]; then echo 1; else echo 0; fi)" \
    "the CSV holds 8 rows with distinct keys" "$(cat "$tmp/full.csv")"
head -n 1 "$tmp/full.csv" | grep -q '^schema,key,backend,verdict,reason,batch,heads,kv_heads,seq_q,seq_kv,d_k,d_v,causal,'
result "$(yes_if [ $? = 0 ])" "the CSV header names its columns, schema first" "$(head -n 1 "$tmp/full.csv")"
result "$(yes_if [ "$(tail -n +2 "$tmp/full.csv" | cut -d, -f1,4 | sort -u)" = "13,PASSED" ])" \
    "every row carries the schema version and its verdict"

"$py" - "$tmp/full.json" >"$tmp/py" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ctx, bms = d["context"], d["benchmarks"]
assert ctx["json_schema_version"] == 3, ctx
for k in ("date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "caches",
          "library_build_type", "cpu_model", "git_revision", "compiler", "threads"):
    assert k in ctx, k
its = [b for b in bms if b["run_type"] == "iteration"]
aggs = [b for b in bms if b["run_type"] == "aggregate"]
assert len(its) == 8 * 3 and len(aggs) == 8 * 4, (len(its), len(aggs))
for b in its:
    for k in ("name", "run_name", "iterations", "real_time", "cpu_time", "time_unit",
              "repetitions", "repetition_index", "threads", "GFLOPS"):
        assert k in b, (k, b)
    assert b["name"].startswith("attn/naive/b:1/h:") and b["time_unit"] == "us"
    assert b["iterations"] >= 1 and b["real_time"] > 0 and b["label"] == "PASSED"
names = {b["aggregate_name"] for b in aggs}
assert names == {"mean", "median", "stddev", "cv"}, names
assert all(b["name"] == b["run_name"] + "_" + b["aggregate_name"] for b in aggs)
print("json ok")
PY
result "$(yes_if grep -q 'json ok' "$tmp/py")" "the JSON parses and has Google Benchmark's shape" "$(cat "$tmp/py")"

if [ -z "$compare" ]; then
    skip "compare.py not installed (Debian package libbenchmark-tools)" "compare.py reads the JSON"
elif ! "$py" -c 'import scipy' 2>/dev/null; then
    skip "$py has no scipy (Debian package python3-scipy), which compare.py needs" "compare.py reads the JSON"
else
    "$py" "$compare" --no-color filters "$tmp/full.json" naive naive >"$tmp/cmp" 2>&1
    code=$?
    result "$(yes_if [ $code = 0 ] && grep -q 'attn/\[naive vs. naive\]/b:1/h:2/sq:64' "$tmp/cmp")" \
        "compare.py filters reads the JSON" "exit $code: $(head -c 3000 "$tmp/cmp")"
fi

cp "$tmp/full.csv" "$tmp/copy.csv"
"$bin" $args --csv "$tmp/full.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(yes_if [ $code = 2 ] && cmp -s "$tmp/full.csv" "$tmp/copy.csv" && grep -q 'add --resume' "$tmp/err")" \
    "an existing CSV is never overwritten without --resume" "exit $code: $(cat "$tmp/err")"

printf 'a,b,c\n' >"$tmp/foreign.csv"
"$bin" $args --csv "$tmp/foreign.csv" --resume >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(yes_if [ $code = 2 ] && grep -q 'not an attnbench CSV' "$tmp/err")" \
    "--resume refuses a CSV that is not ours" "exit $code: $(cat "$tmp/err")"

# Found by fuzzing (tests/fuzz/csv/crash-nul-byte.csv): a NUL byte inside a
# row crashed the reader; it is refused, and the file left as it was.
{ head -n 2 "$tmp/full.csv"; printf '3,attn/naive\000x,naive\n'; } >"$tmp/nul.csv"
cp "$tmp/nul.csv" "$tmp/nul-copy.csv"
"$bin" $args --csv "$tmp/nul.csv" --resume >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(yes_if [ $code = 2 ] && grep -q 'a NUL byte at offset' "$tmp/err" && cmp -s "$tmp/nul.csv" "$tmp/nul-copy.csv")" \
    "--resume refuses a CSV with a NUL byte in a row and leaves it untouched" "exit $code: $(cat "$tmp/err")"

# A run cut off after 3 rows and in the middle of the 4th.
head -n 4 "$tmp/full.csv" >"$tmp/part.csv"
printf '1,attn/naive/b:1/h:2/sq:64/skv:64/dk:8/dv:8/caus' >>"$tmp/part.csv"
"$bin" $args --csv "$tmp/part.csv" --resume >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(yes_if [ $code = 0 ] && grep -q 'torn last row' "$tmp/err" && grep -q '5 cases run.*3 already in' "$tmp/out")" \
    "--resume cuts off a torn row and runs only the 5 missing cases" "exit $code: $(cat "$tmp/err") $(tail -n 2 "$tmp/out")"
result "$(if [ "$(keys "$tmp/part.csv")" = "$(keys "$tmp/full.csv")" ] && [ "$(dups "$tmp/part.csv")" = 0 ]; then echo 1; else echo 0; fi)" \
    "the resumed CSV has every case once" "$(cat "$tmp/part.csv")"

# Killed between the JSON and the CSV: the JSON holds all 8 cases, the CSV 3.
# Resuming reruns the 5 and must not count them twice.
head -n 4 "$tmp/full.csv" >"$tmp/ahead.csv"
cp "$tmp/full.json" "$tmp/ahead.json"
"$bin" $args --csv "$tmp/ahead.csv" --json "$tmp/ahead.json" --resume >/dev/null 2>"$tmp/err"
"$py" - "$tmp/ahead.json" >"$tmp/py" 2>&1 <<'PY'
import json, sys
names = [b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"]
         if b["run_type"] == "aggregate" and b["aggregate_name"] == "median"]
assert len(names) == 8 and len(set(names)) == 8, names
print("json ok")
PY
result "$(yes_if grep -q 'json ok' "$tmp/py")" \
    "--resume drops JSON entries the CSV lacks and reruns them: every case once" "$(cat "$tmp/py" "$tmp/err")"

# Real interruptions: SIGTERM, then SIGKILL, each once some rows are in.
big="--backend=naive --seq 64:512:x2 --heads 1,2,4 --dk 16 --reps 3 --min-time 0.05"
interrupt() {  # interrupt SIGNAL: start or resume the sweep, signal it after 2 more rows
    before=$(rows "$tmp/kill.csv" 2>/dev/null || echo 0)
    "$bin" $big --csv "$tmp/kill.csv" --json "$tmp/kill.json" $resume >/dev/null 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 400 ] && kill -0 $pid 2>/dev/null &&
        [ "$(rows "$tmp/kill.csv" 2>/dev/null || echo 0)" -lt $((before + 2)) ]; do
        sleep 0.05
        i=$((i + 1))
    done
    kill -s "$1" $pid 2>/dev/null
    wait $pid 2>/dev/null
    resume=--resume
}
resume=
interrupt TERM
after_term=$(rows "$tmp/kill.csv")
interrupt KILL
after_kill=$(rows "$tmp/kill.csv")
result "$(if [ "$after_term" -ge 2 ] && [ "$after_term" -lt "$after_kill" ] && [ "$after_kill" -lt 12 ]; then echo 1; else echo 0; fi)" \
    "SIGTERM and SIGKILL each stopped the sweep part-way ($after_term, then $after_kill of 12 rows)"
"$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/kill.json" 2>"$tmp/py"
result "$(yes_if [ $? = 0 ])" "the JSON of an interrupted run is still valid JSON" "$(cat "$tmp/py")"
"$bin" $big --csv "$tmp/kill.csv" --json "$tmp/kill.json" --resume >"$tmp/out" 2>"$tmp/err"
code=$?
bad=$(tail -n +2 "$tmp/kill.csv" | grep -cv '^13,attn/naive/')
result "$(if [ $code = 0 ] && [ "$(rows "$tmp/kill.csv")" = 12 ] && [ "$(dups "$tmp/kill.csv")" = 0 ] && [ "$bad" = 0 ]; then echo 1; else echo 0; fi)" \
    "after SIGTERM and SIGKILL, --resume completes the 12 cases with no duplicate or torn row" \
    "exit $code, $(rows "$tmp/kill.csv") rows, $(dups "$tmp/kill.csv") duplicated, $bad malformed: $(cat "$tmp/err")"

# The resumed JSON keeps what the interrupted runs wrote: every case once.
"$py" - "$tmp/kill.json" >"$tmp/py" 2>&1 <<'PY'
import json, sys
names = [b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"]
         if b["run_type"] == "aggregate" and b["aggregate_name"] == "median"]
assert len(names) == 12 and len(set(names)) == 12, names
print("json ok")
PY
result "$(yes_if grep -q 'json ok' "$tmp/py")" "the resumed JSON holds each of the 12 cases once" "$(cat "$tmp/py")"

# A finished sweep of every backend (the variants' knobs in their keys, so
# causal both ways), resumed: nothing runs again, no row or JSON entry is
# added, and the files are unchanged.
aargs="--backend=all --seq 16 --dk 8 --heads 2 --causal=both --reps 1 --min-time 0.001"
"$bin" $aargs --csv "$tmp/every.csv" --json "$tmp/every.json" >"$tmp/out" 2>&1
cp "$tmp/every.csv" "$tmp/every0.csv"
cp "$tmp/every.json" "$tmp/every0.json"
nb=$("$bin" --list | tail -n +2 | sed '/^$/,$d' | wc -l)
"$bin" $aargs --csv "$tmp/every.csv" --json "$tmp/every.json" --resume >"$tmp/out2" 2>&1
code=$?
ran=$(grep -cE '^[a-z0-9-]+~? +(PASSED|FAILED|SKIPPED|ERROR|MISTRUSTED|TIMEOUT) ' "$tmp/out2")
json_same=0
"$py" - "$tmp/every0.json" "$tmp/every.json" >"$tmp/py" 2>&1 <<'PY' && json_same=1
import json, sys
a, b = (json.load(open(p))["benchmarks"] for p in sys.argv[1:])
assert [x["name"] for x in a] == [x["name"] for x in b], "the entries differ"
PY
result "$(yes_if [ $code = 0 ] && [ "$(rows "$tmp/every.csv")" = $((2 * nb)) ] && [ "$ran" = 0 ] &&
    cmp -s "$tmp/every.csv" "$tmp/every0.csv" && [ $json_same = 1 ] &&
    grep -q "$((2 * nb)) already in" "$tmp/out2")" \
    "--resume of a finished sweep of all $nb backends runs nothing and adds no row or entry" \
    "exit $code, $(rows "$tmp/every.csv") rows for $nb backends, $ran cases run; $(cat "$tmp/py"); $(tail -5 "$tmp/out2")"
# The same one case, resumed: nothing runs, and it says so.
"$bin" --backend=all --seq 16 --dk 8 --heads 2 --reps 1 --csv "$tmp/every.csv" --resume >"$tmp/out2" 2>&1
code=$?
result "$(yes_if [ $code = 0 ] && cmp -s "$tmp/every.csv" "$tmp/every0.csv" &&
    grep -q "^$nb cases already in .* (--resume): not run again" "$tmp/out2")" \
    "--resume of one finished case of every backend says so and runs nothing" "exit $code: $(tail -5 "$tmp/out2")"

# --shard I/N and attnbench merge: three shards of the sweep above, run as
# separate processes, merge into the unsharded run's set of keys.
sargs="--backend=naive,tiled --seq 8:32:x2 --heads 1,2 --dk 8 --reps 2 --min-time 0.001"
"$bin" $sargs --csv "$tmp/all.csv" >/dev/null 2>&1
for i in 0 1 2; do
    "$bin" $sargs --shard $i/3 --csv "$tmp/shard$i.csv" >"$tmp/shard$i.out" 2>&1 &
done
wait
"$bin" merge "$tmp/merged.csv" "$tmp/shard0.csv" "$tmp/shard1.csv" "$tmp/shard2.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 0 ] && [ "$(rows "$tmp/all.csv")" = 12 ] && [ "$(keys "$tmp/merged.csv")" = "$(keys "$tmp/all.csv")" ]; then echo 1; else echo 0; fi)" \
    "three shards merge into the unsharded sweep's 12 keys" "exit $code: $(cat "$tmp/out" "$tmp/err" "$tmp/shard0.out")"
result "$(if [ "$(rows "$tmp/shard0.csv")" = 4 ] && [ "$(rows "$tmp/shard1.csv")" = 4 ] && grep -q 'shard 1 of 3' "$tmp/shard1.out"; then echo 1; else echo 0; fi)" \
    "each shard ran its third of the cases and said which" "$(cat "$tmp/shard1.out")"
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 \
    "$bin" $sargs --shard slurm --csv "$tmp/slurm.csv" >/dev/null 2>&1
result "$(yes_if [ "$(keys "$tmp/slurm.csv")" = "$(keys "$tmp/shard1.csv")" ])" \
    "--shard slurm takes task 5 of an array starting at 4 as shard 1 of 3"
"$bin" merge "$tmp/part2.csv" "$tmp/shard0.csv" "$tmp/shard2.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 4 ] && grep -q '4 of the sweep.s 12 cases are in none of the files: index 1, 4, 7, 10' "$tmp/err" && [ "$(rows "$tmp/part2.csv")" = 8 ]; then echo 1; else echo 0; fi)" \
    "merge without shard 1 writes the 8 cases it has and lists the 4 missing (exit 4)" "exit $code: $(cat "$tmp/err")"
"$bin" merge "$tmp/dup.csv" "$tmp/all.csv" "$tmp/shard0.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 2 ] && grep -q 'with different results' "$tmp/err" && [ ! -e "$tmp/dup.csv" ]; then echo 1; else echo 0; fi)" \
    "merge refuses one case with two different results, and writes nothing" "exit $code: $(cat "$tmp/err")"
"$bin" merge "$tmp/same.csv" "$tmp/shard0.csv" "$tmp/shard0.csv" "$tmp/shard1.csv" "$tmp/shard2.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 0 ] && [ "$(keys "$tmp/same.csv")" = "$(keys "$tmp/all.csv")" ]; then echo 1; else echo 0; fi)" \
    "a shard given twice merges once" "exit $code: $(cat "$tmp/err")"
{ head -n 1 "$tmp/shard0.csv" | sed 's/,cases,/,runs,/'; tail -n +2 "$tmp/shard1.csv"; } >"$tmp/other.csv"
"$bin" merge "$tmp/mixed.csv" "$tmp/shard0.csv" "$tmp/other.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 2 ] && grep -q 'not an attnbench CSV of schema' "$tmp/err" && [ ! -e "$tmp/mixed.csv" ]; then echo 1; else echo 0; fi)" \
    "merge refuses a CSV of another schema" "exit $code: $(cat "$tmp/err")"
"$bin" --backend=naive --seq 8 --heads 1 --dk 8 --reps 2 --min-time 0.001 --shard 0/2 --csv "$tmp/other2.csv" >/dev/null 2>&1
"$bin" merge "$tmp/mixed2.csv" "$tmp/shard0.csv" "$tmp/other2.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 2 ] && grep -q 'not shards of one sweep' "$tmp/err"; then echo 1; else echo 0; fi)" \
    "merge refuses shards of different sweeps" "exit $code: $(cat "$tmp/err")"
"$bin" merge "$tmp/merged.csv" "$tmp/shard0.csv" >"$tmp/out" 2>"$tmp/err"
code=$?
result "$(if [ $code = 2 ] && grep -q 'the file exists' "$tmp/err"; then echo 1; else echo 0; fi)" \
    "merge never overwrites its output" "exit $code: $(cat "$tmp/err")"

echo "1..$n"
