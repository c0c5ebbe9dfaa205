#!/usr/bin/env python3
"""The figures of results/arch/README.md, from the data scripts/results-arch
wrote: writes Markdown on stdout (results/arch/tables.md), so that the README
quotes numbers that its data holds and no number is typed by hand.

    python3 scripts/arch_tables.py results/arch > results/arch/tables.md
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csvload  # noqa: E402
from plot_arch import crossover  # noqa: E402

NAMES = {"rnn": "LSTM + Linear", "cnn": "CNN", "attention": "single-head attention",
         "mha": "8-head layer"}


def fit(pts):
    """log-log slope of y against x over pts (3 points or more)."""
    if len(pts) < 3:
        return None
    lx = [math.log(x) for x, _ in pts]
    ly = [math.log(y) for _, y in pts]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else None


def fmt_ms(s):
    ms = s * 1e3
    return f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"


def main():
    d = sys.argv[1]
    rows = csvload.read_csv(os.path.join(d, "arch.csv"), ["model", "verdict", "seq", "median_s"],
                            "arch_tables.py", "an attnbench arch CSV", "run scripts/results-arch")
    ok = [r for r in rows if r["verdict"] == "PASSED" and r["median_s"]]
    by = {}
    for r in ok:
        by.setdefault(r["model"], []).append(r)
    for m in by:
        by[m].sort(key=lambda r: int(r["seq"]))
    ns = sorted({int(r["seq"]) for r in ok})
    small = [n for n in ns if n <= 512]
    f = rows[0]
    print(f"<!-- written by scripts/arch_tables.py from {d}/arch.csv, torch.csv and "
          "conv-*.csv; do not edit -->\n")
    print(f"Shapes: batch {f['batch']}, d_model {f['dmodel']}, N = {ns[0]}..{ns[-1]}, "
          f"{f['threads']} threads. {len(ok)} of {len(rows)} rows PASSED their check; the "
          f"largest error was {max(float(r['max_err']) / float(r['tol']) for r in ok) * 1e-4:.2g} "
          f"of the largest output (tolerance 1e-4).\n")

    print(f"## Each model\n")
    print(f"| model | time / CNN's, N = {small[0]}..{small[-1]} | GFLOP/s, N = {small[0]}..{small[-1]} "
          f"| time exponent, N = {ns[0]}..{ns[-1]} | memory exponent | measured / analytic memory "
          f"at N = {ns[-1]} |")
    print("|---|---|---|---|---|---|")
    for m in ("rnn", "cnn", "attention", "mha"):
        rs = by.get(m, [])
        if not rs:
            continue
        sm = [r for r in rs if int(r["seq"]) <= 512]
        rel = [float(r["time_vs_cnn"]) for r in sm if r["time_vs_cnn"]]
        gf = [float(r["gflops"]) for r in sm if r["gflops"]]
        te = fit([(int(r["seq"]), float(r["median_s"])) for r in rs])
        me = fit([(int(r["seq"]), float(r["peak_bytes"])) for r in rs if r["peak_bytes"]])
        last = rs[-1]
        ratio = (f"{float(last['peak_bytes']) / 2**20:.0f} / "
                 f"{float(last['analytic_bytes']) / 2**20:.0f} MiB"
                 if last["analytic_bytes"] else f"{float(last['peak_bytes']) / 2**20:.0f} MiB / -")
        print(f"| {NAMES[m]} | {min(rel):.2f}x to {max(rel):.2f}x | {min(gf):.0f} to {max(gf):.0f} "
              f"| {te:.2f} | {me:.2f} | {ratio} |")

    print("\n## Where attention becomes slower than the LSTM\n")
    for m in ("attention", "mha"):
        if m in by and "rnn" in by:
            c = crossover(by[m], by["rnn"], "median_s")
            n = [int(r["seq"]) for r in by[m]]
            if c is None:
                print(f"- {NAMES[m]}: faster than the LSTM at every N up to {max(n)}.")
            elif c <= min(n):
                print(f"- {NAMES[m]}: slower than the LSTM already at N = {min(n)}.")
            else:
                print(f"- {NAMES[m]}: slower than the LSTM from N ≈ {c:.0f} (log-log "
                      "interpolated between the two N around it).")

    tpath = os.path.join(d, "torch.csv")
    if os.path.exists(tpath):
        torch = {}
        for r in csvload.read_csv(tpath, ["model", "seq", "verdict", "median_s"], "arch_tables.py",
                                  "a scripts/peers arch CSV", "run scripts/results-arch"):
            torch[(r["model"].replace("torch-", ""), int(r["seq"]))] = r
        print("\n## Beside PyTorch (median per forward, the same run; PyTorch / attnbench)\n")
        print("| N | " + " | ".join(NAMES[m] for m in ("rnn", "cnn", "attention", "mha")) + " |")
        print("|---:|---|---|---|---|")
        for n in ns:
            cells = []
            for m in ("rnn", "cnn", "attention", "mha"):
                a = next((r for r in by.get(m, []) if int(r["seq"]) == n), None)
                t = torch.get((m, n))
                if a is None:
                    cells.append("-")
                elif t is None or t["verdict"] != "RAN":
                    cells.append(f"{t['verdict'] if t else 'none'} / {fmt_ms(float(a['median_s']))} ms")
                else:
                    ta, tt = float(a["median_s"]), float(t["median_s"])
                    cells.append(f"{fmt_ms(tt)} / {fmt_ms(ta)} ms ({tt / ta:.2f}x)")
            print(f"| {n} | " + " | ".join(cells) + " |")
        cvs = [float(t["cv"]) for (m, n), t in torch.items() if m == "rnn" and n <= 512 and t["cv"]]
        if cvs:
            print(f"\nPyTorch's LSTM cv up to N = 512: {min(cvs) * 100:.0f}% to {max(cvs) * 100:.0f}%.")

    conv = {}
    for mode in ("shift", "im2col"):
        p = os.path.join(d, f"conv-{mode}.csv")
        if os.path.exists(p):
            for r in csvload.read_csv(p, ["seq", "median_s", "peak_bytes"], "arch_tables.py",
                                      "an attnbench arch CSV", "run scripts/results-arch"):
                conv[(mode, int(r["seq"]))] = r
    if conv:
        print("\n## The CNN's convolution: three shifted GEMMs against im2col + one GEMM\n")
        print("| N | shifted GEMMs | im2col | peak memory, shifted / im2col |")
        print("|---:|---|---|---|")
        for n in sorted({n for _, n in conv}):
            s, i = conv.get(("shift", n)), conv.get(("im2col", n))
            if s and i:
                print(f"| {n} | {fmt_ms(float(s['median_s']))} ms | {fmt_ms(float(i['median_s']))} ms "
                      f"| {float(s['peak_bytes']) / 2**20:.0f} / {float(i['peak_bytes']) / 2**20:.0f} MiB |")


if __name__ == "__main__":
    main()
