#!/bin/sh
# Plugins (docs/writing-a-backend.md): the example plugin loads, is listed with its
# file, and PASSES the correctness grid; every refusal of the loader is one
# line and exit 2; planted plugins are judged as a built-in would be (an
# overrun of O and a wrong head FAILED, a crash an ERROR while the sweep
# goes on); attnbench's own backends built as a plugin PASS; a plugin built
# out of the tree against the installed header and pkg-config file loads
# and PASSES.
#   test_plugin.sh ATTNBENCH EXAMPLE.so ASPLUGIN.so SRCROOT BUILDROOT \
#       OVERRUN.so WRONG_HEAD.so CRASH.so NEWER_ABI.so NO_ENTRY.so OTHER_HEADER.so \
#       BUILTIN_NAME.so
bin=${1:?usage: see the top of test_plugin.sh}
example=$2 asplugin=$3 src=$4 build=$5 overrun=$6 wronghead=$7 crash=$8 newer=$9
shift 9
noentry=$1 otherheader=$2 builtinname=$3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

# verdicts CSV: the verdict column of every row, one per line
verdicts() {
    sed 's/"[^"]*"//g' "$1" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print $c["backend"] " " $c["verdict"] }'
}

# Listed, with the file it came from; by the environment as by --plugin.
"$bin" --plugin "$example" --list >"$tmp/out" 2>&1
result "$(grep -q "^example.rows  *available .*(plugin $example)" "$tmp/out" &&
    grep -q "^plugin example ($example): the example plugin" "$tmp/out" && echo 1 || echo 0)" \
    "--list names example.rows, available, with its file, and the plugin with its summary" \
    "$(cat "$tmp/out")"
ATTNBENCH_PLUGINS="/nowhere/else.so:$example" "$bin" --list >"$tmp/out" 2>&1
result "$(grep -q "ATTNBENCH_PLUGINS: /nowhere/else.so: not a loadable shared library" "$tmp/out" && echo 1 || echo 0)" \
    "ATTNBENCH_PLUGINS: a missing file is refused, naming the variable" "$(cat "$tmp/out")"
ATTNBENCH_PLUGINS="$example" "$bin" --list >"$tmp/out" 2>&1
result "$(grep -q "^example.rows  *available" "$tmp/out" && echo 1 || echo 0)" \
    "ATTNBENCH_PLUGINS loads the example" "$(cat "$tmp/out")"

# The plugin's name selects its backends, beside a built-in.
"$bin" --plugin "$example" --backend=example,tiled --seq 64 --reps 1 --min-time 0.001 \
    >"$tmp/out" 2>&1
code=$?
result "$([ $code = 0 ] && grep -q "^example.rows  *PASSED" "$tmp/out" &&
    grep -q "^tiled  *PASSED" "$tmp/out" && echo 1 || echo 0)" \
    "--backend=example,tiled: the example's backend and tiled side by side, both PASSED" \
    "exit $code: $(tail -4 "$tmp/out")"

# The correctness grid: MHA, GQA, MQA; causal and not; Nq != Nk; padding;
# d of 8 to 128. Every case PASSED, in a child process (the default for a
# plugin's cases).
"$bin" --plugin "$example" --backend example.rows --batch 1,2 --heads 4 --kv-heads 4,2,1 \
    --seq 1,17,64 --seq-kv 64 --dk 8,128 --causal=both --reps 1 --min-time 0.001 \
    --csv "$tmp/grid.csv" >"$tmp/out" 2>&1
code=$?
rows=$(verdicts "$tmp/grid.csv" | grep -c "^example.rows PASSED$")
result "$([ $code = 0 ] && [ "$rows" = 72 ] && echo 1 || echo 0)" \
    "the grid: 72 cases of example.rows PASSED (MHA/GQA/MQA, causal both, Nq 1/17/64 over 64 keys)" \
    "exit $code, $rows PASSED; $(tail -5 "$tmp/out")"
"$bin" --plugin "$example" --backend example.rows --batch 3 --seq 20 --kv-len 20,7,0 --causal \
    --reps 1 --min-time 0.001 >"$tmp/out" 2>&1
code=$?
result "$([ $code = 0 ] && grep -q "^example.rows  *PASSED" "$tmp/out" && echo 1 || echo 0)" \
    "padding (--kv-len 20,7,0): PASSED" "exit $code: $(tail -3 "$tmp/out")"
repro=$(grep -m1 "repro:" "$tmp/out" | sed 's/.*repro: //')
result "$(echo "$repro" | grep -qF -- "--plugin $example" && sh -c "$repro --reps 1" 2>&1 | grep -q "^example.rows  *PASSED" && echo 1 || echo 0)" \
    "the repro line carries --plugin and reruns the case to PASSED" "repro: $repro"

# The loader's refusals.
refused "--plugin $src/README.md: not a loadable shared library" --plugin "$src/README.md" --list
refused "--plugin $noentry: no attnbench_plugin function: not an attnbench plugin" \
    --plugin "$noentry" --list
refused "--plugin $newer: built against attnbench's ABI 3, this attnbench serves ABI 2" \
    --plugin "$newer" --list
refused "--plugin $otherheader: its attn_backend is" --plugin "$otherheader" --list
refused "--plugin $builtinname: the plugin's name 'naive' is a built-in backend's" \
    --plugin "$builtinname" --list
refused "--plugin $example: a plugin named example is already loaded from $example" \
    --plugin "$example" --plugin "$example" --list
refused "--backend: unknown backend 'example.rows'" --backend example.rows --list

# Planted plugins: lies FAILED, a crash an ERROR, and the next case's row
# written all the same.
"$bin" --plugin "$overrun" --backend planted.rows --seq 16 --reps 1 >"$tmp/out" 2>&1
code=$?
result "$([ $code = 1 ] && grep -q "^planted.rows  *FAILED" "$tmp/out" && grep -q "written outside its bounds" "$tmp/out" && echo 1 || echo 0)" \
    "a plugin writing one float past O: FAILED by the canaries, exit 1" "exit $code: $(cat "$tmp/out" | tail -12)"
"$bin" --plugin "$wronghead" --backend planted.rows --heads 4 --seq 16 --reps 1 >"$tmp/out" 2>&1
code=$?
result "$([ $code = 1 ] && grep -q "^planted.rows  *FAILED" "$tmp/out" && echo 1 || echo 0)" \
    "a plugin computing head 1 for head 0: FAILED, exit 1" "exit $code: $(tail -8 "$tmp/out")"
"$bin" --plugin "$crash" --plugin "$example" --backend planted.rows,example.rows --seq 16,24 \
    --reps 1 --min-time 0.001 --csv "$tmp/crash.csv" >"$tmp/out" 2>&1
code=$?
verdicts "$tmp/crash.csv" >"$tmp/v"
result "$([ $code = 4 ] && [ "$(grep -c '^planted.rows ERROR$' "$tmp/v")" = 2 ] &&
    [ "$(grep -c '^example.rows PASSED$' "$tmp/v")" = 2 ] && echo 1 || echo 0)" \
    "a plugin aborting in run: ERROR at both shapes (no --case-timeout: a child process by default), the other plugin's rows PASSED, exit 4" \
    "exit $code; rows: $(cat "$tmp/v"); $(tail -6 "$tmp/out")"

# attnbench's naive and tiled built as a plugin from their own files.
"$bin" --plugin "$asplugin" --backend asplugin.naive,asplugin.tiled --heads 8 --kv-heads 2 \
    --seq 1,100 --seq-kv 100 --causal --dtype fp32,bf16 --reps 1 --min-time 0.001 \
    --csv "$tmp/as.csv" >"$tmp/out" 2>&1
code=$?
result "$([ $code = 0 ] && [ "$(verdicts "$tmp/as.csv" | grep -c ' PASSED$')" = 8 ] && echo 1 || echo 0)" \
    "naive and tiled as a plugin: 8 cases PASSED (GQA, decode and prefill, fp32 and bf16)" \
    "exit $code: $(verdicts "$tmp/as.csv")"

# Out of the tree: meson install into a fresh prefix, then the example
# built with nothing but the installed header, found through pkg-config.
if ! command -v pkg-config >/dev/null 2>&1; then
    skip "pkg-config is not installed" "a plugin built out of the tree through pkg-config"
else
    meson install -C "$build" --no-rebuild --destdir "$tmp/dest" >"$tmp/install.log" 2>&1
    code=$?
    pc=$(find "$tmp/dest" -name attnbench.pc | head -1)
    cflags=$(PKG_CONFIG_SYSROOT_DIR="$tmp/dest" PKG_CONFIG_PATH="$(dirname "$pc")" \
        pkg-config --cflags attnbench 2>&1)
    cp "$src/examples/plugin/example.c" "$tmp/mine.c"
    ${CC:-cc} -std=c11 -O2 -shared -fPIC $cflags "$tmp/mine.c" -o "$tmp/libmine.so" -lm \
        >"$tmp/cc.log" 2>&1
    built=$?
    installed=$(find "$tmp/dest" -name attnbench -type f | head -1)
    "$installed" --plugin "$tmp/libmine.so" --backend example.rows --heads 4 --kv-heads 2 \
        --seq 33 --causal --reps 1 --min-time 0.001 >"$tmp/out" 2>&1
    ran=$?
    result "$([ $code = 0 ] && [ $built = 0 ] && [ $ran = 0 ] && [ -n "$pc" ] &&
        grep -q "^example.rows  *PASSED" "$tmp/out" && echo 1 || echo 0)" \
        "meson install --destdir: attnbench, the header and attnbench.pc; a plugin built out of the tree with \$(pkg-config --cflags attnbench) loads in the installed attnbench and PASSES" \
        "install $code, cc $built ($cflags): $(cat "$tmp/cc.log"), run $ran: $(tail -3 "$tmp/out"); $(tail -5 "$tmp/install.log")"
fi

echo "1..$n"
