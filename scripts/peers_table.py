"""The tables of results/peers, as Markdown on stdout: per case, our fastest
exact backend against each peer that ran (median times from one CSV,
measured in the same run); the verdicts; tiled alone against each peer; the
spread (cv) of ours and of the peers; each peer's workspace at the largest
N; and, given the two arch CSVs, attnbench arch's models against the same
models in PyTorch. Every figure of results/peers/README.md is here.

    python3 scripts/peers_table.py peers.csv [arch-attnbench.csv arch-torch.csv]
"""
import statistics
import sys

import csvload

PEERS = ["torch-sdpa", "torch-math", "numpy"]
OURS = ["tiled", "blas", "onednn"]


def main():
    if len(sys.argv) not in (2, 4):
        csvload.die("peers_table.py",
                    "usage: peers_table.py PEERS.csv [ARCH-ATTNBENCH.csv ARCH-TORCH.csv]")
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
    summary(rows, cases, peers)
    if len(sys.argv) == 4:
        arch(sys.argv[2], sys.argv[3])


def summary(rows, cases, peers):
    print("\nVerdicts (every peer row checked by attnbench's checker): " +
          csvload.tally(r["verdict"] for r in rows) + ".")
    print("\n| peer | tiled vs the peer at N >= 2048: peer / tiled | where least |")
    print("|---|---|---|")
    for p in peers:
        ratio = [(c[p][0] / c["tiled"][0], k) for k, c in cases.items()
                 if k[2] >= 2048 and p in c and "tiled" in c]
        if ratio:
            lo, hi = min(ratio), max(ratio)
            d, causal, n = lo[1]
            print(f"| {p} | {lo[0]:.2f}x to {hi[0]:.2f}x | d = {d}, N = {n}"
                  f"{', causal' if causal == '1' else ''} (tiled {cases[lo[1]]['tiled'][0] * 1e3:.1f}"
                  f" ms) |")
    print("\n| who | median cv | largest cv |")
    print("|---|---|---|")
    for who in OURS + peers:
        cv = [c[who][1] for c in cases.values() if who in c]
        if cv:
            print(f"| {who} | {100 * statistics.median(cv):.1f}% | {100 * max(cv):.0f}% |")
    nmax = max(int(r["seq_q"]) for r in rows)
    print(f"\nWorkspace at N = {nmax} (attnbench's: the tracking allocator's peak; numpy's: "
          "tracemalloc's peak over one call; torch: only its RSS growth is known):\n")
    print("| backend | d | causal | workspace | RSS growth |")
    print("|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["backend"], int(r["d_k"]), r["causal"])):
        if int(r["seq_q"]) != nmax or r["verdict"] != "PASSED":
            continue
        ws, rss = r.get("workspace_bytes") or "", r.get("rss_peak_bytes") or ""
        print(f"| {r['backend']} | {r['d_k']} | {'yes' if r['causal'] == '1' else 'no'} | "
              f"{mib(ws)} | {mib(rss)} |")


def mib(x):
    return f"{int(x) / 2**20:.1f} MiB" if x else "unknown"


def arch(ours_path, torch_path):
    ours = csvload.read_csv(ours_path, ["model", "verdict", "median_s", "cv", "batch", "seq",
                                        "dmodel", "threads"], "peers_table.py",
                            "an attnbench arch CSV", "run scripts/results-peers")
    torch = csvload.read_csv(torch_path, ["model", "verdict", "median_s", "cv"],
                             "peers_table.py", "a scripts/peers arch CSV",
                             "run scripts/results-peers")
    names = {"rnn": "LSTM + Linear", "cnn": "CNN", "attention": "single-head attention",
             "mha": "8-head attention layer"}
    t = {r["model"].removeprefix("torch-"): r for r in torch}
    r0 = ours[0] if ours else None
    if r0:
        print(f"\nattnbench arch against the same models in PyTorch: B = {r0['batch']}, "
              f"d_model = {r0['dmodel']}, N = {r0['seq']}, {r0['threads']} threads\n")
    print("| model | attnbench arch | verdict | PyTorch | verdict | PyTorch / ours |")
    print("|---|---:|---|---:|---|---:|")
    for r in ours:
        m = r["model"]
        p = t.get(m)
        a = f"{float(r['median_s']) * 1e3:.1f} ms (cv {100 * float(r['cv']):.1f}%)"
        b = f"{float(p['median_s']) * 1e3:.1f} ms (cv {100 * float(p['cv']):.1f}%)" if p else "-"
        ratio = f"{float(p['median_s']) / float(r['median_s']):.2f}x" if p else "-"
        print(f"| {names.get(m, m)} | {a} | {r['verdict']} | {b} | {p['verdict'] if p else '-'} "
              f"| {ratio} |")


if __name__ == "__main__":
    main()
