"""The table of results/peers: per case, our fastest exact backend against
each peer that ran (median times from one CSV, measured in the same run),
as Markdown on stdout.

    python3 scripts/peers_table.py peers.csv
"""
import sys

import csvload

PEERS = ["torch-sdpa", "torch-math", "numpy"]
OURS = ["tiled", "blas", "onednn"]


def main():
    if len(sys.argv) != 2:
        csvload.die("peers_table.py", "usage: peers_table.py PEERS.csv")
    rows = csvload.read_csv(sys.argv[1], ["backend", "verdict", "reason", "seq_q", "d_k",
                                          "causal", "real_median_s", "real_cv"],
                            "peers_table.py", "an attnbench CSV (schema 3, 4 or 5)",
                            "run scripts/results-peers")
    cases, skipped = {}, {}
    for r in rows:
        k = (int(r["d_k"]), r["causal"], int(r["seq_q"]))
        if r["verdict"] == "PASSED" and r["real_median_s"]:
            cases.setdefault(k, {})[r["backend"]] = (float(r["real_median_s"]), float(r["real_cv"]))
        elif r["verdict"] == "SKIPPED" and r["backend"] in PEERS:
            skipped[r["backend"]] = r["reason"]
        elif r["verdict"] != "SKIPPED":
            csvload.die("peers_table.py", f"{r['backend']} d={r['d_k']} N={r['seq_q']}: "
                        f"{r['verdict']} {r['reason']}")
    peers = [p for p in PEERS if any(p in c for c in cases.values())]
    print("| d | causal | N | ours: fastest (ms) | " +
          " | ".join(f"{p} (ms) | {p} / ours" for p in peers) + " |")
    print("|---|---|---|---|" + "---|---|" * len(peers))
    for k in sorted(cases):
        c = cases[k]
        ours = [(c[b][0], b) for b in OURS if b in c]
        if not ours:
            continue
        t, b = min(ours)
        cells = []
        for p in peers:
            if p in c:
                cells += [f"{c[p][0] * 1e3:.1f} (cv {100 * c[p][1]:.0f}%)", f"{c[p][0] / t:.2f}x"]
            else:
                cells += ["-", "-"]
        print(f"| {k[0]} | {'yes' if k[1] == '1' else 'no'} | {k[2]} | {b} {t * 1e3:.1f} | " +
              " | ".join(cells) + " |")
    for p, why in sorted(skipped.items()):
        print(f"\n{p}: SKIPPED: {why}")


if __name__ == "__main__":
    main()
