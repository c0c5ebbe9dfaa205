"""The tables of results/tiled from its CSVs, as Markdown on stdout: tiled's
GFLOP/s and % of the FMA peak by sequence length (and before/after when
before.csv is there), tiled against blas and onednn over the default sweep,
1 -> 2 threads, the spread over fresh processes, the verdicts and the
targets. Every % is against the peak measured at the start of the same run;
every figure of results/tiled/README.md is here.

    python3 scripts/tiled_tables.py results/tiled
"""
import glob
import os
import re
import statistics
import sys

import csvload

NEED = ["backend", "verdict", "reason", "seq_q", "d_k", "causal", "threads", "real_median_s",
        "real_cv", "gflops", "peak_gflops"]
PROG = "tiled_tables.py"
VERDICTS = []   # of every row read, for the count


def load(path, required=True):
    if not required and not os.path.exists(path):
        return []
    rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV (schema 4 or later)",
                            "run scripts/results-tiled")
    VERDICTS.extend(r["verdict"] for r in rows)
    for r in rows:
        if r["verdict"] not in ("PASSED", "SKIPPED"):
            print(f"{PROG}: {path}: {r['backend']} N={r['seq_q']} d={r['d_k']}: "
                  f"{r['verdict']} {r['reason']}", file=sys.stderr)
    return [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]


def shape(r):
    return (int(r["d_k"]), int(r["causal"]), int(r["seq_q"]))


def nlabel(n):
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def tmark(s):
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def rate_table(title, rows, peak):
    by = {shape(r): float(r["gflops"]) for r in rows}
    ns = sorted({k[2] for k in by})
    print(f"### {title}\n")
    print("| d | causal | " + " | ".join(nlabel(n) for n in ns) + " | min |")
    print("|---|---|" + "---|" * (len(ns) + 1))
    for d in sorted({k[0] for k in by}):
        for c in (0, 1):
            cells = [by.get((d, c, n)) for n in ns]
            have = [x for x in cells if x is not None]
            if not have:
                continue
            txt = [f"{x:.0f} ({100 * x / peak:.0f}%)" if x is not None else "-" for x in cells]
            print(f"| {d} | {'yes' if c else 'no'} | " + " | ".join(txt) +
                  f" | {100 * min(have) / peak:.1f}% |")
    print()
    for d in sorted({k[0] for k in by}):
        a, b = by.get((d, 0, 4096)), by.get((d, 0, 32768))
        if a and b:
            print(f"- d = {d}, not causal: the rate at N = 32K is {100 * b / a:.1f}% of the rate "
                  f"at N = 4K.")
    print()


def vs_table(rows):
    by = {}
    for r in rows:
        by.setdefault(shape(r), {})[r["backend"]] = float(r["real_median_s"])
    others = [b for b in ("blas", "onednn") if any(b in v for v in by.values())]
    print("### tiled against blas and onednn (median times; ratio = other / tiled, "
          "above 1: tiled faster)\n")
    print("| d | causal | N | tiled | " + " | ".join(f"{b} | ratio" for b in others) + " |")
    print("|---|---|---|---|" + "---|---|" * len(others))
    worst = {b: None for b in others}
    for k in sorted(by):
        v = by[k]
        if "tiled" not in v:
            continue
        cells = []
        for b in others:
            if b in v:
                ratio = v[b] / v["tiled"]
                cells += [tmark(v[b]), f"{ratio:.2f}"]
                if worst[b] is None or ratio < worst[b][0]:
                    worst[b] = (ratio, k)
            else:
                cells += ["-", "-"]
        print(f"| {k[0]} | {'yes' if k[1] else 'no'} | {nlabel(k[2])} | {tmark(v['tiled'])} | "
              + " | ".join(cells) + " |")
    print()
    for b, w in worst.items():
        if w:
            print(f"- the least ratio against {b}: {w[0]:.2f} (d = {w[1][0]}, "
                  f"{'causal' if w[1][1] else 'not causal'}, N = {nlabel(w[1][2])}).")
    print()


def threads_table(rows):
    by = {}
    for r in rows:
        by.setdefault(shape(r), {})[int(r["threads"])] = float(r["real_median_s"])
    print("### 1 -> 2 threads (N = 4096)\n")
    print("| d | causal | 1 thread | 2 threads | speedup |")
    print("|---|---|---|---|---|")
    for k in sorted(by):
        v = by[k]
        if 1 in v and len(v) > 1:
            t = max(v)
            print(f"| {k[0]} | {'yes' if k[1] else 'no'} | {tmark(v[1])} | {tmark(v[t])} | "
                  f"{v[1] / v[t]:.2f}x |")
    print()


def fresh_table(paths, peak):
    """The spread over fresh processes: (min, max, spread %) or None."""
    rates = []
    for p in paths:
        rates += [(float(r["gflops"]), float(r["real_cv"] or 0)) for r in load(p)]
    if not rates:
        return None
    g = [x for x, _ in rates]
    med = statistics.median(g)
    print(f"### N = 8192, d = 128, not causal, in {len(g)} fresh processes\n")
    print("| process | " + " | ".join(str(i + 1) for i in range(len(g))) + " |")
    print("|---|" + "---|" * len(g))
    print("| GFLOP/s | " + " | ".join(f"{x:.0f}" for x in g) + " |")
    print("| % peak | " + " | ".join(f"{100 * x / peak:.0f}%" for x in g) + " |")
    print("| cv within | " + " | ".join(f"{100 * c:.1f}%" for _, c in rates) + " |")
    print(f"\n- spread across processes: {min(g):.0f}..{max(g):.0f} GFLOP/s, "
          f"(max - min) / median = {100 * (max(g) - min(g)) / med:.1f}%.\n")
    return min(g), max(g), 100 * (max(g) - min(g)) / med


def targets(rate, peak, vs, th):
    """The prefill targets, each with its verdict from the rows above."""
    print("### Targets\n")
    cells = [(100 * float(r["gflops"]) / peak, shape(r)) for r in rate if int(r["seq_q"]) >= 1024]
    low = sorted(c for c in cells if c[0] < 85)
    print(f"- >= 85% of the FMA peak at every N >= 1K, d = 64 and 128, causal and not: "
          f"{len(cells) - len(low)} of {len(cells)} cells; "
          + ("**met**." if not low else "**not met** at " + ", ".join(
              f"d = {d}{' causal' if c else ''} N = {nlabel(n)} ({x:.1f}%)" for x, (d, c, n) in low)
             + "."))
    bound = {r.get("bound") for r in rate} - {None, ""}
    if bound == {"compute"}:
        print("- Every case is compute-bound under the roofline: its % of the peak is its % "
              "of the roofline (`pct_roofline` in rate.csv).")
    if vs:
        by = {}
        for r in vs:
            by.setdefault(shape(r), {})[r["backend"]] = float(r["real_median_s"])
        for b in ("blas", "onednn"):
            rs = [v[b] / v["tiled"] for v in by.values() if b in v and "tiled" in v]
            if rs:
                print(f"- Faster than {b} at every shape of the default sweep: least ratio "
                      f"{min(rs):.2f}: **{'met' if min(rs) > 1 else 'not met'}**.")
    if th:
        by = {}
        for r in th:
            by.setdefault(shape(r), {})[int(r["threads"])] = float(r["real_median_s"])
        sp = [v[1] / v[max(v)] for v in by.values() if 1 in v and len(v) > 1]
        if sp:
            print(f"- 1 -> 2 threads >= 1.9x at N = 4096: {min(sp):.2f}x to {max(sp):.2f}x: "
                  f"**{'met' if min(sp) >= 1.9 else 'not met'}**.")
    print()


def main():
    if len(sys.argv) != 2:
        csvload.die(PROG, "usage: tiled_tables.py DIR (results/tiled)")
    d = sys.argv[1]
    rate = load(os.path.join(d, "rate.csv"))
    if not rate:
        csvload.die(PROG, f"{d}/rate.csv: no PASSED rows")
    peak = max(float(r["peak_gflops"] or 0) for r in rate)
    if peak <= 0:
        csvload.die(PROG, f"{d}/rate.csv: no peak (run attnbench --peak first)")
    after = ""
    path = os.path.join(d, "peak-after.log")
    if os.path.exists(path):
        m = re.search(r"([0-9.]+) GFLOP/s on [0-9]+ threads", open(path).read())
        if m:
            after = f"; measured again at the end: {float(m.group(1)):.1f}"
    print(f"FMA peak, measured at the start of the run: {peak:.1f} GFLOP/s "
          f"({rate[0]['threads']} threads){after}.\n")
    before = load(os.path.join(d, "before.csv"), required=False)
    if before:
        rate_table("Before (BASE): GFLOP/s (% of peak), B = 1, H = 8", before, peak)
    rate_table("tiled: GFLOP/s (% of peak), B = 1, H = 8", rate, peak)
    vs = load(os.path.join(d, "vs.csv"), required=False)
    if vs:
        vs_table(vs)
    th = load(os.path.join(d, "threads.csv"), required=False)
    if th:
        threads_table(th)
    fresh_table(sorted(glob.glob(os.path.join(d, "fresh-*.csv"))), peak)
    targets(rate, peak, vs, th)
    print("Verdicts over every CSV of the run: " + csvload.tally(VERDICTS) + ".")


if __name__ == "__main__":
    main()
