# TAP helpers for the shell tests; source it. stdout carries only TAP.
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

skip() {  # skip REASON DESCRIPTION
    n=$((n + 1))
    echo "ok $n - $2 # SKIP $1"
}

yes_if() { if "$@"; then echo 1; else echo 0; fi; }

# refused_code CODE TEXT ARGS...: "$bin" ARGS exits CODE with stdout empty and
# one line on stderr containing TEXT (the caller sets bin, and tmp a folder).
refused_code() {
    want=$1 text=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    code=$?
    pass=0
    [ "$code" = "$want" ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
        grep -qF -- "$text" "$tmp/err" && pass=1
    result "$pass" "refused ($want): $*" \
        "exit $code, stderr: $(cat "$tmp/err"), stdout bytes: $(wc -c <"$tmp/out")"
}

# refused TEXT ARGS...: refused as a usage error (exit 2).
refused() { refused_code 2 "$@"; }
