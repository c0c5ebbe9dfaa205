#!/usr/bin/env python3
"""The figures of results/sweep/README.md, from the sweep's CSV: writes
Markdown on stdout (results/sweep/tables.md), so that no number there is
typed by hand.

    python3 scripts/sweep_tables.py results/sweep/sweep.csv > results/sweep/tables.md
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csvload  # noqa: E402

ORDER = ["tiled", "onednn", "blas", "naive", "vulkan", "vulkan-3pass", "local", "sparse",
         "linear", "performer", "linformer"]


def fit(pts):
    if len(pts) < 3:
        return None
    lx, ly = [math.log(x) for x, _ in pts], [math.log(y) for _, y in pts]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else None


def t(s):
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def size(b):
    for u in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or u == "GiB":
            return f"{b:.0f} {u}" if u == "B" else f"{b:.1f} {u}"
        b /= 1024


def main():
    path = sys.argv[1]
    rows = csvload.read_csv(path, ["backend", "verdict", "seq_q", "d_k", "causal", "real_median_s",
                                   "gflops", "workspace_bytes"], "sweep_tables.py",
                            "an attnbench sweep CSV", "run scripts/results-sweep")
    print(f"<!-- written by scripts/sweep_tables.py from {path}; do not edit -->\n")
    print(f"{len(rows)} cases: " + csvload.tally(r["verdict"] for r in rows) + ".")
    skipped = sorted({(r["backend"], r["reason"]) for r in rows if r["verdict"] == "SKIPPED"})
    for be, why in skipped:
        print(f"SKIPPED: {be}: {why}")
    ok = [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]
    cell = {(r["backend"], int(r["d_k"]), r["causal"], int(r["seq_q"])): r for r in ok}
    ns = sorted({int(r["seq_q"]) for r in ok})
    for dk in sorted({int(r["d_k"]) for r in ok}):
        for causal in ("0", "1"):
            bes = [b for b in ORDER if any(k[0] == b and k[1] == dk and k[2] == causal for k in cell)]
            if not bes:
                continue
            print(f"\n## d_k = {dk}{', causal' if causal == '1' else ''}: median time per run\n")
            print("| backend | " + " | ".join(str(n) for n in ns) + " | exponent, N = 1K..16K | "
                  f"workspace at its largest N |")
            print("|---|" + "---|" * (len(ns) + 2))
            for b in bes:
                rs = [cell.get((b, dk, causal, n)) for n in ns]
                e = fit([(n, float(r["real_median_s"])) for n, r in zip(ns, rs)
                         if r and 1024 <= n <= 16384])
                last = [r for r in rs if r][-1]
                ws = size(float(last["workspace_bytes"])) if last["workspace_bytes"] else "-"
                print(f"| {b} | " + " | ".join(t(float(r["real_median_s"])) if r else "-" for r in rs)
                      + f" | {e:.2f} | {ws} (N = {last['seq_q']}) |" if e is not None else
                      f"| {b} | " + " | ".join(t(float(r["real_median_s"])) if r else "-" for r in rs)
                      + f" | - | {ws} (N = {last['seq_q']}) |")
            # Where each variant overtakes tiled.
            over = []
            for b in ("local", "sparse", "linear", "performer", "linformer"):
                first = next((n for n in ns if (b, dk, causal, n) in cell and ("tiled", dk, causal, n)
                              in cell and float(cell[(b, dk, causal, n)]["real_median_s"]) <
                              float(cell[("tiled", dk, causal, n)]["real_median_s"])), None)
                if b in bes:
                    over.append(f"{b} from N = {first}" if first else f"{b} never")
            if over:
                print("\nFaster than tiled: " + "; ".join(over) + ".")


if __name__ == "__main__":
    main()
