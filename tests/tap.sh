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
