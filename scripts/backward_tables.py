"""The tables of results/backward from its CSVs, as Markdown on stdout: each
backend's time, GFLOP/s and % of the FMA peak for the forward, the backward
and both, by N; tiled against blas and naive; the backward's time over the
forward's; the workspace of each pass; the targets with their verdicts.
Every % is against the peak measured at the start of the same run; every
figure of results/backward/README.md is here.

    python3 scripts/backward_tables.py results/backward
"""
import os
import re
import sys

import csvload

NEED = ["backend", "verdict", "reason", "pass", "heads", "seq_q", "d_k", "causal", "threads",
        "real_median_s", "gflops", "peak_gflops", "workspace_bytes", "dq_nmse", "dk_nmse",
        "dv_nmse", "nmse"]
PROG = "backward_tables.py"
VERDICTS = []
PASSES = ("fwd", "bwd", "fwdbwd")
MIB = 2.0 ** 20


def load(path, required=True):
    if not required and not os.path.exists(path):
        return []
    rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV of schema 9 (--pass)",
                            "run scripts/results-backward")
    VERDICTS.extend(r["verdict"] for r in rows)
    for r in rows:
        if r["verdict"] not in ("PASSED", "SKIPPED"):
            print(f"{PROG}: {path}: {r['backend']} {r['pass']} N={r['seq_q']} d={r['d_k']}: "
                  f"{r['verdict']} {r['reason']}", file=sys.stderr)
    return [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]


def key(r):
    return (r["backend"], r["pass"], int(r["d_k"]), int(r["causal"]), int(r["seq_q"]))


def nlabel(n):
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def tmark(s):
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def rate_table(rows, backend, peak):
    by = {key(r): r for r in rows if r["backend"] == backend}
    if not by:
        return
    ns = sorted({k[4] for k in by})
    print(f"### {backend}: GFLOP/s (% of the FMA peak), B = 1, H = 8\n")
    print("| pass | d | causal | " + " | ".join(nlabel(n) for n in ns) + " |")
    print("|---|---|---|" + "---|" * len(ns))
    for ps in PASSES:
        for d in sorted({k[2] for k in by}):
            for c in (0, 1):
                cells = [by.get((backend, ps, d, c, n)) for n in ns]
                if not any(cells):
                    continue
                txt = [f"{float(x['gflops']):.0f} ({100 * float(x['gflops']) / peak:.0f}%)"
                       if x else "-" for x in cells]
                print(f"| {ps} | {d} | {'yes' if c else 'no'} | " + " | ".join(txt) + " |")
    print()


def vs_table(rows, other, ps):
    """tiled's median time against other's, the same pass and shape."""
    t = {key(r)[2:]: float(r["real_median_s"]) for r in rows
         if r["backend"] == "tiled" and r["pass"] == ps}
    o = {key(r)[2:]: float(r["real_median_s"]) for r in rows
         if r["backend"] == other and r["pass"] == ps}
    both = sorted(set(t) & set(o))
    if not both:
        return {}
    print(f"### {ps}: tiled against {other} (median times, same run)\n")
    print(f"| d | causal | N | tiled | {other} | {other} / tiled |")
    print("|---|---|---|---|---|---|")
    out = {}
    for k in both:
        d, c, n = k
        out[k] = o[k] / t[k]
        print(f"| {d} | {'yes' if c else 'no'} | {nlabel(n)} | {tmark(t[k])} | {tmark(o[k])} | "
              f"{out[k]:.2f}x |")
    print()
    return out


def bwd_over_fwd(rows):
    print("### The backward's time over the forward's (FlashAttention's count: 2.5)\n")
    print("| backend | d | causal | " + " | ".join(
        nlabel(n) for n in sorted({int(r["seq_q"]) for r in rows})) + " |")
    ns = sorted({int(r["seq_q"]) for r in rows})
    print("|---|---|---|" + "---|" * len(ns))
    t = {key(r): float(r["real_median_s"]) for r in rows}
    for be in sorted({r["backend"] for r in rows}):
        for d in sorted({int(r["d_k"]) for r in rows}):
            for c in (0, 1):
                cells = []
                for n in ns:
                    f, b = t.get((be, "fwd", d, c, n)), t.get((be, "bwd", d, c, n))
                    cells.append(f"{b / f:.2f}" if f and b else "-")
                if any(x != "-" for x in cells):
                    print(f"| {be} | {d} | {'yes' if c else 'no'} | " + " | ".join(cells) + " |")
    print()


def workspace_table(rows):
    print("### Workspace (the tracked allocator's peak, all threads), B = 1, H = 8, causal off, "
          "d = 64\n")
    sel = [r for r in rows if int(r["d_k"]) == 64 and r["causal"] == "0"]
    ns = sorted({int(r["seq_q"]) for r in sel})
    print("| backend | pass | " + " | ".join(nlabel(n) for n in ns) + " |")
    print("|---|---|" + "---|" * len(ns))
    by = {(r["backend"], r["pass"], int(r["seq_q"])): int(r["workspace_bytes"])
          for r in sel if r["workspace_bytes"]}
    for be in sorted({k[0] for k in by}):
        for ps in PASSES:
            cells = [by.get((be, ps, n)) for n in ns]
            if any(x is not None for x in cells):
                print(f"| {be} | {ps} | " + " | ".join(
                    "-" if x is None else f"{x / MIB:.2f} MiB" if x < 2 ** 30
                    else f"{x / 2 ** 30:.2f} GiB" for x in cells) + " |")
    print()
    return by


def accuracy(rows):
    worst = {}
    for r in rows:
        if r["pass"] == "fwd":
            continue
        for g in ("dq", "dk", "dv"):
            x = float(r[f"{g}_nmse"] or 0)
            worst[(r["backend"], g)] = max(worst.get((r["backend"], g), 0.0), x)
    print("### Accuracy: the largest NMSE of each gradient against the double reference\n")
    print("| backend | dQ | dK | dV |")
    print("|---|---|---|---|")
    for be in sorted({k[0] for k in worst}):
        print(f"| {be} | " + " | ".join(f"{worst[(be, g)]:.1e}" for g in ("dq", "dk", "dv")) +
              " |")
    print()


def targets(rows, peak, vs_bwd, vs_peer, ws):
    print("### Targets\n")
    rate = [(100 * float(r["gflops"]) / peak, int(r["d_k"]), int(r["causal"]), int(r["seq_q"]))
            for r in rows if r["backend"] == "tiled" and r["pass"] == "bwd"
            and int(r["seq_q"]) >= 2048]
    if rate:
        lo = min(rate)
        print(f"- tiled backward >= 65% of the FMA peak at N >= 2048, d = 64 and 128: lowest "
              f"{lo[0]:.1f}% (d = {lo[1]}, {'causal' if lo[2] else 'not causal'}, N = "
              f"{nlabel(lo[3])}): **{'met' if lo[0] >= 65 else 'not met'}**.")
    def against(vs, what, want):
        at = {k: v for k, v in vs.items() if k[2] == 4096}
        if not at:
            print(f"- tiled backward >= {want}x {what} at N = 4096: **not measured** (no rows "
                  "at N = 4096).")
            return
        each = ", ".join(f"d = {d} {'causal' if c else 'no mask'} {v:.2f}x"
                         for (d, c, _), v in sorted(at.items()))
        met = [v >= want for v in at.values()]
        causal = [v >= want for k, v in at.items() if k[1]]
        plain = [v >= want for k, v in at.items() if not k[1]]
        verdict = "met" if all(met) else "not met" if not any(met) else \
            "met under the causal mask only" if all(causal) and not any(plain) else "met in part"
        print(f"- tiled backward >= {want}x {what} at N = 4096: {each}: **{verdict}**.")

    against(vs_bwd, "blas's", 2)
    against(vs_peer, "the PyTorch peer's (torch-math's autograd)", 4)
    big = [(be, x) for (be, ps, n), x in ws.items() if ps == "bwd" and n == 16384]
    if big:
        d = dict(big)
        t, b = d.get("tiled"), d.get("blas")
        txt = []
        if t is not None:
            txt.append(f"tiled {t / MIB:.2f} MiB in all, {t / 8 / MIB:.2f} MiB per head")
        if b is not None:
            txt.append(f"blas {b / 2 ** 30:.2f} GiB in all (two N x N matrices per thread)")
        ok = t is not None and b is not None and t / 8 < 16 * MIB and b >= 2 ** 30
        print(f"- Workspace of the backward at N = 16384: {', '.join(txt)}; target under 16 MiB "
              f"per head against blas's >= 1 GiB: **{'met' if ok else 'not met'}**.")
    print()


def main():
    if len(sys.argv) != 2:
        csvload.die(PROG, "usage: backward_tables.py DIR (results/backward)")
    d = sys.argv[1]
    rows = load(os.path.join(d, "sweep.csv"))
    if not rows:
        csvload.die(PROG, f"{d}/sweep.csv: no PASSED rows")
    naive = load(os.path.join(d, "naive.csv"), required=False)
    big = load(os.path.join(d, "big.csv"), required=False)
    peers = load(os.path.join(d, "peers.csv"), required=False)
    peak = max(float(r["peak_gflops"] or 0) for r in rows)
    if peak <= 0:
        csvload.die(PROG, f"{d}/sweep.csv: no peak (run attnbench --peak first)")
    after = ""
    path = os.path.join(d, "peak-after.log")
    if os.path.exists(path):
        m = re.search(r"([0-9.]+) GFLOP/s on [0-9]+ threads", open(path).read())
        if m:
            after = f"; measured again at the end: {float(m.group(1)):.1f}"
    print(f"FMA peak, measured at the start of the run: {peak:.1f} GFLOP/s "
          f"({rows[0]['threads']} threads){after}.\n")
    for be in ("tiled", "blas"):
        rate_table(rows, be, peak)
    rate_table(naive, "naive", peak)
    vs_bwd = vs_table(rows, "blas", "bwd")
    vs_table(rows, "blas", "fwdbwd")
    vs_table(rows + naive, "naive", "bwd")
    vs_peer = vs_table(rows + peers, "torch-math", "bwd")
    vs_table(rows + peers, "torch-math", "fwd")
    bwd_over_fwd(rows)
    ws = workspace_table(rows + big)
    accuracy(rows + naive + big + peers)
    targets(rows, peak, vs_bwd, vs_peer, ws)
    print("Verdicts over every CSV of the run: " + csvload.tally(VERDICTS) + ".")


if __name__ == "__main__":
    main()
