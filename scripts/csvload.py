"""Reading attnbench's CSV files in the plot and table scripts: one place for
the checks every reader makes (the file exists, has rows, has the columns)."""
import csv
import os
import sys


def die(prog, msg):
    print(f"{prog}: {msg}", file=sys.stderr)
    sys.exit(1)


def read_csv(path, need, prog, what, hint):
    """The rows of path as dicts (perhaps none). Exits with one line naming
    path when it is missing, has no header, or lacks a column of need (what:
    the kind of CSV; hint: how to make one)."""
    if not os.path.exists(path):
        die(prog, f"{path}: no such file ({hint})")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            die(prog, f"{path}: empty (no header): {hint}")
        missing = [c for c in need if c not in reader.fieldnames]
        if missing:
            die(prog, f"{path}: not {what}: no column {', '.join(missing)}")
        return list(reader)


def tally(values):
    """"3 PASSED, 1 SKIPPED": how many of each value, in sorted order."""
    count = {}
    for v in values:
        count[v] = count.get(v, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(count.items()))
