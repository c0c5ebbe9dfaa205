"""The tables of results/decode from its CSVs, as Markdown on stdout:
decoding's bandwidth per backend, split-KV against unsplit, and grouped-query
prefill against multi-head (times and K/V bytes). All numbers of one table
come from one run.

    python3 scripts/decode_tables.py results/decode
"""
import os
import sys

import csvload

NEED = ["backend", "verdict", "reason", "batch", "heads", "kv_heads", "seq_q", "seq_kv",
        "causal", "splits", "real_median_s", "real_cv", "gbs", "pct_bw", "gflops", "pct_peak",
        "kv_bytes", "peak_gbs", "peak_gflops"]


def load(path):
    rows = csvload.read_csv(path, NEED, "decode_tables.py", "an attnbench CSV (schema 4 or 5)",
                            "run scripts/results-decode")
    bad = [r for r in rows if r["verdict"] not in ("PASSED", "SKIPPED")]
    for r in bad:
        print(f"decode_tables.py: {path}: {r['backend']} {r['key'] if 'key' in r else ''}: "
              f"{r['verdict']} {r['reason']}", file=sys.stderr)
    return [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]


def ms(r):
    return float(r["real_median_s"]) * 1e3


def kib(n):
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def nk_label(n):
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def decode_table(rows):
    backends = [b for b in ("tiled", "onednn", "blas", "naive") if any(r["backend"] == b for r in rows)]
    peak = max(float(r["peak_gbs"] or 0) for r in rows)
    print(f"### Decoding (Nq = 1, H = 32, d = 128): GB/s and % of the triad bandwidth "
          f"({peak:.1f} GB/s, measured in the same run)\n")
    print("| B | Hkv | Nk | K/V | tiled time | " + " | ".join(f"{b} GB/s (%)" for b in backends) + " |")
    print("|---|---|---|---|---|" + "---|" * len(backends))
    cases = {}
    for r in rows:
        k = (int(r["batch"]), -int(r["kv_heads"]), int(r["seq_kv"]))
        cases.setdefault(k, {})[r["backend"]] = r
    for k in sorted(cases):
        c = cases[k]
        any_r = next(iter(c.values()))
        t = f"{ms(c['tiled']):.3f} ms" if "tiled" in c else "-"
        cells = [f"{float(c[b]['gbs']):.1f} ({float(c[b]['pct_bw']):.0f}%)" if b in c else "-"
                 for b in backends]
        print(f"| {k[0]} | {-k[1]} | {nk_label(k[2])} | {kib(int(any_r['kv_bytes']))} | {t} | "
              + " | ".join(cells) + " |")
    tgt = [r for r in rows if r["backend"] == "tiled" and int(r["seq_kv"]) >= 16384 and
           int(r["kv_heads"]) in (8, 32)]
    if tgt:
        lo = min(tgt, key=lambda r: float(r["pct_bw"]))
        print(f"\ntiled at Nk >= 16K, Hkv = 8 and 32: {min(float(r['pct_bw']) for r in tgt):.0f}%"
              f"..{max(float(r['pct_bw']) for r in tgt):.0f}% of the triad bandwidth "
              f"(lowest: B = {lo['batch']}, Hkv = {lo['kv_heads']}, Nk = {nk_label(int(lo['seq_kv']))}).")


def splits_table(rows):
    un = {int(r["seq_kv"]): r for r in rows if r["splits"] == "1"}
    au = {int(r["seq_kv"]): r for r in rows if r["splits"] == ""}
    print("\n### Split-KV: B = 1, H = 32, Hkv = 1 (multi-query), d = 128, Nq = 1, tiled\n")
    print("| Nk | unsplit (--splits 1) | split (auto) | speedup |")
    print("|---|---|---|---|")
    for n in sorted(set(un) & set(au)):
        print(f"| {nk_label(n)} | {ms(un[n]):.3f} ms | {ms(au[n]):.3f} ms | "
              f"{ms(un[n]) / ms(au[n]):.2f}x |")


def prefill_table(rows):
    print("\n### Grouped-query prefill: H = 32, d = 128; Hkv = 8 against Hkv = 32 "
          "(same query heads, same FLOPs)\n")
    backends = [b for b in ("tiled", "onednn", "blas", "naive") if any(r["backend"] == b for r in rows)]
    print("| N | causal | K/V bytes 32 / 8 | " +
          " | ".join(f"{b} Hkv=32 | {b} Hkv=8 | {b} 8/32" for b in backends) + " |")
    print("|---|---|---|" + "---|---|---|" * len(backends))
    cases = {}
    for r in rows:
        cases.setdefault((r["causal"], int(r["seq_q"])), {})[(r["backend"], int(r["kv_heads"]))] = r
    for k in sorted(cases):
        c = cases[k]
        kv = [c[x] for x in c if x[1] == 32][:1], [c[x] for x in c if x[1] == 8][:1]
        ratio = f"{int(kv[0][0]['kv_bytes']) / int(kv[1][0]['kv_bytes']):.0f}x" if kv[0] and kv[1] else "-"
        cells = []
        for b in backends:
            a, g = c.get((b, 32)), c.get((b, 8))
            cells += [f"{ms(a):.1f} ms" if a else "-", f"{ms(g):.1f} ms" if g else "-",
                      f"{ms(g) / ms(a):.2f}" if a and g else "-"]
        print(f"| {k[1]} | {'yes' if k[0] == '1' else 'no'} | {ratio} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) != 2:
        csvload.die("decode_tables.py", "usage: decode_tables.py RESULTS_DIR")
    d = sys.argv[1]
    decode_table(load(os.path.join(d, "decode.csv")))
    splits_table(load(os.path.join(d, "splits.csv")))
    prefill_table(load(os.path.join(d, "prefill.csv")))


if __name__ == "__main__":
    main()
