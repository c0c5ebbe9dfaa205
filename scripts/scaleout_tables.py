#!/usr/bin/env python3
"""Tables of results/scaleout/ (scripts/results-scaleout): strong and weak
scaling of the ring backend beside tiled, from strong.csv and weak.csv
(attnbench --csv, schema 6), and each rank's figures from the logs.

usage: scaleout_tables.py DIR  (markdown on stdout)"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csvload  # noqa: E402

PROG = "scaleout_tables.py"
NEED = ["backend", "verdict", "seq_q", "causal", "threads", "real_median_s", "gflops",
        "ranks", "rank_compute_s", "rank_comm_s", "rank_sent_bytes",
        "rank_workspace_bytes", "score_matrix_bytes", "kv_bytes", "nmse"]


def mib(x):
    return f"{float(x) / 2**20:.1f} MiB"


def ms(x):
    return f"{float(x) * 1e3:.0f} ms"


def wait(x):
    """A wait for K/V: microseconds where it is short."""
    x = float(x)
    return f"{x * 1e6:.0f} µs" if x < 1e-3 else ms(x)


def label(r):
    if r["backend"] == "ring":
        p = int(r["ranks"] or 1)
        return f"ring, {p} rank{'s' if p > 1 else ''}"
    return f"tiled, {r['threads']} thread{'s' if r['threads'] != '1' else ''}"


def peaks(d):
    """The 1-thread fp32 FMA peak and the core count of peak.log."""
    text = open(os.path.join(d, "peak.log")).read()
    m = re.search(r"fp32 FMA: ([0-9.]+) GFLOP/s on 1 thread, [0-9.]+ GFLOP/s on (\d+) threads",
                  text)
    if not m:
        csvload.die(PROG, f"{d}/peak.log: no fp32 FMA peak line")
    return float(m.group(1)), int(m.group(2))


PEAK1, CORES = None, None


def cores_used(r):
    """The cores a case ran on: ranks x threads, at most the machine's."""
    n = int(r["ranks"] or 1) * int(r["threads"])
    return min(n, CORES)


def table(rows, title, base_of, ratio):
    print(f"### {title}\n")
    print(f"| N | causal | run on | median | GFLOP/s | % peak of its cores | {ratio} | compute (slowest rank) "
          "| waiting for K/V (most) | sent per rank | workspace per rank | NMSE |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["verdict"] != "PASSED":
            print(f"| {r['seq_q']} | {'yes' if r['causal'] == '1' else 'no'} | {label(r)} | "
                  f"{r['verdict']} | | | | | | | | |")
            continue
        base = base_of(r)
        if not base:
            sp = ""
        elif ratio == "speedup":
            sp = f"{float(base) / float(r['real_median_s']):.2f}x"
        else:
            sp = f"{float(r['real_median_s']) / float(base):.2f}x"
        ring = r["backend"] == "ring"
        print(f"| {r['seq_q']} | {'yes' if r['causal'] == '1' else 'no'} | {label(r)} | "
              f"{ms(r['real_median_s'])} | {float(r['gflops']):.1f} | "
              f"{100 * float(r['gflops']) / (PEAK1 * cores_used(r)):.0f}% | {sp} | "
              f"{ms(r['rank_compute_s']) if ring else ''} | "
              f"{wait(r['rank_comm_s']) if ring else ''} | "
              f"{mib(r['rank_sent_bytes']) if ring else ''} | "
              f"{mib(r['rank_workspace_bytes']) if ring else ''} | {float(r['nmse']):.1e} |")
    print()


def per_rank(path):
    """(case line, [rank lines]) of each ring case in a log."""
    out, case, ranks = [], None, None
    for line in open(path):
        if line.startswith("case: "):
            case = line[6:].strip()
        elif line.startswith("  ranks: "):
            ranks = []
            out.append((case, ranks))
        elif ranks is not None and re.match(r"    rank \d+: ", line):
            ranks.append(line.strip())
        else:
            ranks = None
    return out


def main():
    if len(sys.argv) != 2:
        csvload.die(PROG, "usage: scaleout_tables.py DIR")
    d = sys.argv[1]
    global PEAK1, CORES
    PEAK1, CORES = peaks(d)
    hint = "run scripts/results-scaleout"
    strong = csvload.read_csv(os.path.join(d, "strong.csv"), NEED, PROG,
                              "an attnbench CSV (schema 6)", hint)
    weak = csvload.read_csv(os.path.join(d, "weak.csv"), NEED, PROG,
                            "an attnbench CSV (schema 6)", hint)
    key = lambda r: (r["causal"], r["backend"] != "ring", int(r["ranks"] or 0),  # noqa: E731
                     int(r["threads"]))
    strong.sort(key=key)
    weak.sort(key=lambda r: (r["causal"], int(r["seq_q"])))

    def ring1(rows, causal, n=None):
        for r in rows:
            if r["backend"] == "ring" and r["ranks"] == "1" and r["causal"] == causal and \
                    r["verdict"] == "PASSED" and (n is None or r["seq_q"] == n):
                return r["real_median_s"]
        return None

    print(f"Peak: {PEAK1:.1f} GFLOP/s per core (fp32 FMA, 1 thread, peak.log), {CORES} cores; "
          "each case's % is of the cores it ran on (ranks x threads, at most the machine's).\n")
    print("## Strong scaling: N = 16384 on 1, 2 and 4 ranks (speedup over ring on 1 rank)\n")
    table(strong, "B = 1, H = 4, d = 128", lambda r: ring1(strong, r["causal"]), "speedup")
    print("## Weak scaling: N / P = 4096 (time against ring's at N = 4096 on 1 rank: each "
          "rank's work grows as P, so P is ideal)\n")
    table(weak, "B = 1, H = 4, d = 128", lambda r: ring1(weak, r["causal"], "4096"),
          "time / 1 rank's")
    rows = strong + weak
    print("Verdicts: " + csvload.tally(r["verdict"] for r in rows) + ".\n")
    ring = [r for r in rows if r["backend"] == "ring" and r["verdict"] == "PASSED"]
    if ring:
        most = max(float(r["rank_comm_s"]) for r in ring)
        # F: a rank's flop rate, the slowest rank's compute time over its share of the work
        f = statistics.median(float(r["gflops"]) * float(r["real_median_s"]) /
                              (int(r["ranks"] or 1) * float(r["rank_compute_s"])) for r in ring)
        print(f"The longest wait for a K/V block in any ring case: {wait(most)}. A rank "
              f"computed at a median {f:.0f} GFLOP/s; at that rate the send of a K/V block "
              f"hides behind its compute when N/P >= 2F/B: {2 * f * 1e9 / 12.5e9:.0f} rows "
              "on a 100 Gb/s link (B = 12.5 GB/s).\n")
    print("## Each rank (means over the runs of the case)\n")
    for name in ("strong", "weak"):
        path = os.path.join(d, name + ".log")
        if not os.path.exists(path):
            continue
        for case, ranks in per_rank(path):
            if len(ranks) < 2:
                continue
            print(f"{name}, {len(ranks)} ranks: {case}\n")
            for line in ranks:
                print(f"    {line}")
            print()


if __name__ == "__main__":
    main()
