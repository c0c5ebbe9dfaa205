"""TAP for the Python tests: numbered ok / not ok lines and the plan at the end."""
import sys

_count = 0


def ok(cond, msg):
    """Prints one test line, msg's first line; the rest of msg (a program's
    output, say) as diagnostics, so that no line of it reads as TAP; returns
    cond."""
    global _count
    _count += 1
    first, _, rest = str(msg).partition("\n")
    print(f"{'ok' if cond else 'not ok'} {_count} - {first}", flush=True)
    if rest:
        diag(rest)
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def done():
    """The plan, after the last test line."""
    print(f"1..{_count}", flush=True)


def skip_all_if_asked():
    """`--skip REASON...` as the arguments: the whole program is skipped with its reason."""
    if sys.argv[1:2] == ["--skip"]:
        print(f"1..0 # SKIP {' '.join(sys.argv[2:])}")
        sys.exit(0)
