"""The tables of results/serving from its CSVs and peak logs, as Markdown on
stdout: the machine's ceilings, paged decoding against the contiguous
cache, decoding's throughput against the batch size, a ragged decode batch
against its roofline, a ragged prefill batch against a dense one of the
same FLOPs, and a mixed batch (a prefill chunk among decode tokens) beside
its two phases run alone (and from pool.log, bench_pool's plain read of the
pages' runs), each figure the median of the rounds (one
process each, interleaved), with the targets' verdicts. Every figure of
results/serving/README.md is here.

    python3 scripts/serving_tables.py results/serving
    python3 scripts/serving_tables.py results/serving --dense-seq prefill-1.csv
      (the N of a dense causal batch of the same B, H and d with the FLOPs
       of that CSV's ragged row: what scripts/results-serving runs beside it)
"""
import glob
import math
import os
import re
import statistics
import sys

import csvload
from decode_tables import peaks

PROG = "serving_tables.py"
NEED = ["backend", "verdict", "reason", "batch", "heads", "seq_q", "seq_kv", "d_k", "d_v",
        "probe_gbs",
        "lens", "page", "tokens", "tokens_per_s", "real_median_s", "gflops", "gbs",
        "pct_roofline", "flops"]
PAGE_TARGET = 1.05     # paged time against contiguous, pages of 16, 64, 256
DECODE_TARGET = 75.0   # % of the roofline, the ragged decode batch
PREFILL_TARGET = 0.90  # GFLOP/s against the dense batch of the same FLOPs


def rows_of(d, pattern):
    out = []
    for path in sorted(glob.glob(os.path.join(d, pattern))):
        rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV of schema 12 or later",
                                "run scripts/results-serving")
        for r in rows:
            if r["verdict"] != "PASSED":
                print(f"{PROG}: {path}: B={r['batch']} page={r['page']}: {r['verdict']} "
                      f"{r['reason']}", file=sys.stderr)
        out += [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]
    return out


def median(rows, col):
    vals = [float(r[col]) for r in rows if r[col] != ""]
    return statistics.median(vals) if vals else float("nan")


def pick(rows, **want):
    return [r for r in rows if all(r[k] == str(v) for k, v in want.items())]


def dense_seq(path):
    """N of 8 dense causal prompts with the ragged row's FLOPs."""
    rows = [r for r in csvload.read_csv(path, NEED, PROG, "an attnbench CSV of schema 12 or later",
                                        "run scripts/results-serving") if r["lens"]]
    if not rows:
        csvload.die(PROG, f"{path}: no ragged row")
    r = rows[0]
    per_pair = 2.0 * (int(r["d_k"]) + int(r["d_v"])) * int(r["heads"])
    pairs = float(r["flops"]) / per_pair / int(r["batch"])
    return round((-1 + math.sqrt(1 + 8 * pairs)) / 2)


def verdict(ok):
    return "met" if ok else "missed"


def paged(d):
    paths = sorted(glob.glob(os.path.join(d, "paged-*.csv")))
    rounds = [rows_of(d, os.path.basename(p)) for p in paths]
    rows = [r for rr in rounds for r in rr]
    if not rows:
        return
    print(f"### Paged decoding against the contiguous cache ({len(paths)} rounds)\n")
    print("Nq = 1, Nk = 32K; contiguous is the dense cache. Each figure is the median over "
          "the rounds; 'vs contiguous' is the median of each round's ratio (the two cases "
          "of a round ran in one process, minutes apart at most, the layouts in an order "
          "rotated by one from each round to the next). The target is at most "
          f"{PAGE_TARGET:.2f}x for pages of 16, 64 and 256.\n")
    probes = [float(r["probe_gbs"]) for r in rows if r["probe_gbs"]]
    moved = (f"was {min(probes):.1f} to {max(probes):.1f} GB/s from one case to another here"
             if probes else "was not measured here")
    print(f"The bandwidth measured beside each case (`--bw-probe`) {moved}: 'normalized' is the "
          "median of each round's ratio of % roofline (contiguous over paged), the time ratio "
          "with each case's bandwidth taken out.\n")
    print("| B | page | median | GB/s | % roofline | vs contiguous | normalized | target |")
    print("|---|---|---|---|---|---|---|---|")
    for b in sorted({int(r["batch"]) for r in rows}):
        for page in ["", "1", "16", "64", "256"]:
            sel = pick(rows, batch=b, page=page)
            if not sel:
                continue
            t = median(sel, "real_median_s")
            ratios, norms = [], []
            for rr in rounds:
                base, this = pick(rr, batch=b, page=""), pick(rr, batch=b, page=page)
                if base and this:
                    ratios.append(float(this[0]["real_median_s"]) /
                                  float(base[0]["real_median_s"]))
                    if base[0]["pct_roofline"] and this[0]["pct_roofline"]:
                        norms.append(float(base[0]["pct_roofline"]) /
                                     float(this[0]["pct_roofline"]))
            ratio = statistics.median(ratios) if ratios else float("nan")
            norm = statistics.median(norms) if norms else float("nan")
            tgt = verdict(ratio <= PAGE_TARGET) if page in ("16", "64", "256") else "-"
            print(f"| {b} | {page or 'contiguous'} | {t * 1e3:.2f} ms | {median(sel, 'gbs'):.1f} | "
                  f"{median(sel, 'pct_roofline'):.0f} | {ratio:.2f}x | {norm:.2f}x | {tgt} |")
    print()


def pool(d):
    """bench_pool's rows in pool.log, one block a round: each run size's GB/s and
    time against the sequential stream, the medians over the rounds."""
    path = os.path.join(d, "pool.log")
    if not os.path.exists(path):
        return
    gbs, ratio, order, head = {}, {}, [], None
    with open(path) as f:
        for line in f:
            m = re.match(r"bench_pool: a (\d+) MiB pool, \d+ threads, (\d+) rounds", line)
            head = m.groups() if m else head
            w = line.split()
            if len(w) == 6 and w[2] in ("sequential", "shuffled") and w[5].endswith("x"):
                size = f"{w[0]} {w[1]}"
                if size not in gbs:
                    order.append(size)
                    gbs[size], ratio[size] = [], []
                gbs[size].append(float(w[3]))
                ratio[size].append(float(w[5][:-1]))
    if not order or not head:
        csvload.die(PROG, f"{path}: no rows of bench_pool")
    rounds = len(ratio[order[0]])
    print(f"### The memory's own cost of the runs: a plain read ({rounds} rounds)\n")
    print(f"`tests/bench_pool` after each round's paged cases: a {head[0]} MiB pool read with "
          "no arithmetic, as runs of each size in a seeded shuffle and as one sequential stream "
          f"per thread (the first row); each run of it times every size {head[1]} times, once a turn "
          "in a rotated order, and gives the median of each turn's time against the "
          "sequential stream's. 'vs sequential' is the median of those over the rounds. For "
          "this preset in bf16 a K/V head's run is 4 KiB in a page of 16, 16 KiB in a page of "
          "64 and 64 KiB in a page of 256; decoding reads the 8 K/V heads of a page of 16 "
          "together, a run of 32 KiB (docs/serving.md).\n")
    print("| runs of | order | GB/s | vs sequential | lowest, highest |")
    print("|---|---|---|---|---|")
    for size in order:
        r = ratio[size]
        kind = "sequential" if size == order[0] else "shuffled"
        print(f"| {size} | {kind} | {statistics.median(gbs[size]):.1f} | "
              f"{statistics.median(r):.2f}x | {min(r):.2f}x, {max(r):.2f}x |")
    print()


def layout(page):
    return "contiguous" if page in ("", "0") else f"pages of {page}"


def batches(d):
    rows = rows_of(d, "batch-*.csv")
    if not rows:
        return
    nk = sorted({int(r["seq_kv"]) for r in rows})
    print("### Decoding throughput against the batch size\n")
    print(f"Nq = 1, every request Nk = {', '.join(str(n) for n in nk)}; tokens/s is requests/s "
          "(one token for each request). Medians of the rounds; no target.\n")
    print("| K/V | B | median | tokens/s | GB/s | % roofline | tokens/s vs the smallest B |")
    print("|---|---|---|---|---|---|---|")
    for page in sorted({r["page"] for r in rows}, key=lambda p: int(p or 0)):
        sel = pick(rows, page=page)
        bs = sorted({int(r["batch"]) for r in sel})
        one = median(pick(sel, batch=bs[0]), "tokens_per_s")
        for b in bs:
            sb = pick(sel, batch=b)
            tps = median(sb, "tokens_per_s")
            print(f"| {layout(page)} | {b} | {median(sb, 'real_median_s') * 1e3:.2f} ms | "
                  f"{tps:.0f} | {median(sb, 'gbs'):.1f} | {median(sb, 'pct_roofline'):.0f} | "
                  f"{tps / one:.2f}x |")
    print()


def decode(d):
    rows = rows_of(d, "decode-*.csv")
    if not rows:
        return
    print("### A ragged decode batch (B = 32, Nk uniform in [1K, 32K])\n")
    print(f"Median of the rounds; the target is at least {DECODE_TARGET:.0f}% of the roofline "
          "(the bytes it reads at the bandwidth measured beside it).\n")
    print("| K/V | median | tokens/s (requests/s) | GB/s | % roofline | target |")
    print("|---|---|---|---|---|---|")
    for page in ["", "16", "64"]:
        sel = pick(rows, page=page)
        if not sel:
            continue
        p = median(sel, "pct_roofline")
        print(f"| {'packed' if not page else 'pages of ' + page} | "
              f"{median(sel, 'real_median_s') * 1e3:.2f} ms | {median(sel, 'tokens_per_s'):.0f} | "
              f"{median(sel, 'gbs'):.1f} | {p:.0f} | {verdict(p >= DECODE_TARGET)} |")
    print()


def prefill(d):
    ragged = rows_of(d, "prefill-[0-9]*.csv")
    dense = rows_of(d, "prefill-dense-*.csv")
    if not ragged or not dense:
        return
    print("### A ragged prefill batch against a dense one of the same FLOPs\n")
    print("B = 8, causal: Nq = Nk uniform in [256, 8K], against 8 prompts of one length with "
          f"the same visible pairs; the target is at least {PREFILL_TARGET:.2f}x the dense "
          "batch's GFLOP/s. Medians of the rounds.\n")
    print("| batch | tokens | median | GFLOP/s | vs dense | target |")
    print("|---|---|---|---|---|---|")
    gd = median(dense, "gflops")
    for name, sel in (("ragged", ragged), (f"dense, N = {dense[0]['seq_q']}", dense)):
        g = median(sel, "gflops")
        tgt = verdict(g / gd >= PREFILL_TARGET) if sel is ragged else "-"
        print(f"| {name} | {sel[0]['tokens']} | {median(sel, 'real_median_s') * 1e3:.1f} ms | "
              f"{g:.1f} | {g / gd:.2f}x | {tgt} |")
    print()


def mixed(d):
    parts = (("mixed batch", rows_of(d, "mixed-[0-9]*.csv")),
             ("its prefill chunk alone", rows_of(d, "mixed-prefill-*.csv")),
             ("its decode tokens alone", rows_of(d, "mixed-decode-*.csv")))
    if not all(rows for _, rows in parts):
        return
    m, pre, dec = (rows for _, rows in parts)
    print("### A mixed batch: a prefill chunk among decode tokens\n")
    print(f"The batch ({m[0]['lens'].count(',') + 1} requests, {layout(m[0]['page'])}, causal) "
          "runs as one case; its prefill chunk and its decode tokens also run alone, "
          "as batches of their own, for the time split by phase. Medians of the rounds; "
          "'share' is each phase's part of the two run alone; no target.\n")
    print("| batch | requests | query tokens | median | tokens/s | GFLOP/s | GB/s | share |")
    print("|---|---|---|---|---|---|---|---|")
    tp, td = median(pre, "real_median_s"), median(dec, "real_median_s")
    for (name, sel), share in zip(parts, ("-", f"{tp / (tp + td):.0%}", f"{td / (tp + td):.0%}")):
        print(f"| {name} | {sel[0]['batch']} | {sel[0]['tokens']} | "
              f"{median(sel, 'real_median_s') * 1e3:.1f} ms | {median(sel, 'tokens_per_s'):.0f} | "
              f"{median(sel, 'gflops'):.1f} | {median(sel, 'gbs'):.2f} | {share} |")
    tm = median(m, "real_median_s")
    print(f"\nThe mixed batch took {tm / (tp + td):.2f}x the sum of its phases run alone "
          f"({tm * 1e3:.1f} ms against {tp * 1e3:.1f} + {td * 1e3:.1f} ms).\n")


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--dense-seq":
        print(dense_seq(args[2]))
        return
    if len(args) != 1:
        csvload.die(PROG, "usage: serving_tables.py DIR [--dense-seq CSV]")
    d = args[0]
    print("## Serving batches: the figures\n")
    peaks(d)
    print()
    paged(d)
    pool(d)
    batches(d)
    decode(d)
    prefill(d)
    mixed(d)


if __name__ == "__main__":
    main()
