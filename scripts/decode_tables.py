"""The tables of results/decode from its CSVs and peak logs, as Markdown on
stdout: the machine's measured ceilings, decoding per backend (GB/s and % of
the roofline), tiled against the decode targets (fp32, bf16, fp16 K/V; Nq 1
and 4), split-KV against unsplit, grouped-query prefill against
multi-head, and huge pages against 4 KiB pages. Every figure of
results/decode/README.md is here; all numbers of one table come from one
run.

    python3 scripts/decode_tables.py results/decode
"""
import os
import re
import statistics
import sys

import csvload

NEED = ["backend", "verdict", "reason", "batch", "heads", "kv_heads", "seq_q", "seq_kv",
        "causal", "splits", "kv_dtype", "real_median_s", "real_cv", "gbs", "pct_bw", "gflops",
        "pct_peak", "kv_bytes", "peak_gbs", "peak_gflops", "roofline_gbs", "pct_roofline",
        "bound"]


def load(path):
    rows = csvload.read_csv(path, NEED, "decode_tables.py", "an attnbench CSV of schema 7",
                            "run scripts/results-decode")
    bad = [r for r in rows if r["verdict"] not in ("PASSED", "SKIPPED")]
    for r in bad:
        print(f"decode_tables.py: {path}: {r['backend']} {r.get('key', '')}: "
              f"{r['verdict']} {r['reason']}", file=sys.stderr)
    return [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]


def ms(r):
    return float(r["real_median_s"]) * 1e3


def mib(n):
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def nk_label(n):
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def pct(r):
    return float(r["pct_roofline"])


def peaks(d):
    """The ceilings of peak.log (before the runs) and peak-after.log."""
    print("### The machine's ceilings (`attnbench --peak`, before and after the runs)\n")
    print("| when | fp32 FMA GFLOP/s | bf16 dot GFLOP/s | triad GB/s | read-only GB/s |")
    print("|---|---|---|---|---|")
    for name, when in (("peak.log", "before"), ("peak-after.log", "after")):
        path = os.path.join(d, name)
        if not os.path.exists(path):
            continue
        text = open(path).read()

        def grab(pat):
            m = re.search(pat, text)
            return m.group(1) if m else "-"
        print(f"| {when} | {grab(r'fp32 FMA: .*?, ([0-9.]+) GFLOP/s on')} | "
              f"{grab(r'bf16 dot products .*?, ([0-9.]+) GFLOP/s on')} | "
              f"{grab(r'triad bandwidth: ([0-9.]+)')} | {grab(r'read-only stream: ([0-9.]+)')} |")
    print("\nThe roofline of a case is the longer of its least bytes at the bandwidth and its "
          "FLOPs at the peak of its arithmetic (docs/command-line.md, '%roof'). The bandwidth "
          "is the faster of the two streams above, or where the run measured one beside each "
          "case (`--bw-probe`) the faster of that case's probes, just before and just after "
          "its timed runs; the peak is the one above, or where the run measured it beside each "
          "case (`--fma-probe`) the faster of that case's FMA probes.")


def decode_table(rows):
    backends = [b for b in ("tiled", "onednn", "blas", "naive") if any(r["backend"] == b for r in rows)]
    bws = [float(r["roofline_gbs"] or 0) for r in rows]
    probed = any(r.get("probe_gbs") for r in rows)
    what = (f"the bandwidth probed beside each case, {min(bws):.1f} to {max(bws):.1f} GB/s"
            if probed else f"bandwidth {max(bws):.1f} GB/s")
    print(f"\n### Decoding, fp32 (Nq = 1, H = 32, d = 128): GB/s and % of the roofline "
          f"({what})\n")
    print("| B | Hkv | Nk | K/V | bound | tiled time | " +
          " | ".join(f"{b} GB/s (% roof)" for b in backends) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(backends))
    cases = {}
    for r in rows:
        k = (int(r["batch"]), -int(r["kv_heads"]), int(r["seq_kv"]))
        cases.setdefault(k, {})[r["backend"]] = r
    for k in sorted(cases):
        c = cases[k]
        any_r = next(iter(c.values()))
        t = f"{ms(c['tiled']):.3f} ms" if "tiled" in c else "-"
        cells = [f"{float(c[b]['gbs']):.1f} ({pct(c[b]):.0f}%)" if b in c else "-"
                 for b in backends]
        print(f"| {k[0]} | {-k[1]} | {nk_label(k[2])} | {mib(int(any_r['kv_bytes']))} | "
              f"{any_r['bound']} | {t} | " + " | ".join(cells) + " |")
    print()
    for b in backends:
        for hkv, what in (((8, 32), "Hkv = 8 and 32"), ((1,), "Hkv = 1")):
            s = [r for r in rows if r["backend"] == b and int(r["seq_kv"]) >= 16384 and
                 int(r["kv_heads"]) in hkv]
            if s:
                print(f"- {b}, Nk >= 16K, {what}: {min(map(pct, s)):.0f}% to "
                      f"{max(map(pct, s)):.0f}% of the roofline (median "
                      f"{statistics.median(map(pct, s)):.0f}%), {min(float(r['gbs']) for r in s):.1f}"
                      f" to {max(float(r['gbs']) for r in s):.1f} GB/s")


def targets_table(rows):
    """tiled over the decode targets: >= 80% of the roofline (Hkv = 8, 32),
    >= 70% (Hkv = 1, compute-bound); bf16 <= 0.6x the fp32 time."""
    print("\n### tiled decoding against its roofline: fp32, bf16, fp16 K/V (Q fp32), "
          "H = 32, d = 128\n")
    print("| B | Hkv | Nq | Nk | bound | fp32 | bf16 | fp16 | bf16 / fp32 time | "
          "fp16 / fp32 time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    cases = {}
    for r in rows:
        k = (int(r["batch"]), -int(r["kv_heads"]), int(r["seq_q"]), int(r["seq_kv"]))
        cases.setdefault(k, {})[r["kv_dtype"]] = r
    for k in sorted(cases):
        c = cases[k]
        any_r = next(iter(c.values()))

        def cell(dt):
            r = c.get(dt)
            return f"{ms(r):.2f} ms, {float(r['gbs']):.1f} GB/s, {pct(r):.0f}%" if r else "-"

        def ratio(dt):
            return f"{ms(c[dt]) / ms(c['fp32']):.2f}" if dt in c and "fp32" in c else "-"
        print(f"| {k[0]} | {-k[1]} | {k[2]} | {nk_label(k[3])} | {any_r['bound']} | "
              f"{cell('fp32')} | {cell('bf16')} | {cell('fp16')} | {ratio('bf16')} | "
              f"{ratio('fp16')} |")
    print("\nAgainst the targets (each cell: the least and the median % of the roofline; "
          "met when the least reaches the target):\n")
    print("| Hkv | Nq | target | fp32 | bf16 | fp16 |")
    print("|---|---|---|---|---|---|")
    for hkv, target in (((32, 8), 80), ((1,), 70)):
        for nq in sorted({int(r["seq_q"]) for r in rows}):
            cells = []
            for dt in ("fp32", "bf16", "fp16"):
                s = [pct(r) for r in rows if int(r["kv_heads"]) in hkv and r["kv_dtype"] == dt
                     and int(r["seq_q"]) == nq]
                cells.append(f"{min(s):.1f}% / {statistics.median(s):.0f}%: "
                             f"{'met' if min(s) >= target else 'not met'}" if s else "-")
            print(f"| {' and '.join(map(str, hkv))} | {nq} | >= {target}% | " +
                  " | ".join(cells) + " |")
    for nq in sorted({int(r["seq_q"]) for r in rows}):
        bf = [ms(c["bf16"]) / ms(c["fp32"]) for k, c in cases.items()
              if -k[1] in (8, 32) and k[2] == nq and "bf16" in c and "fp32" in c]
        if bf:
            print(f"\nbf16 over fp32 time, Hkv = 8 and 32, Nq = {nq}: {min(bf):.2f} to "
                  f"{max(bf):.2f} (median {statistics.median(bf):.2f}; the target is <= 0.6)")


def splits_table(rows):
    un = {int(r["seq_kv"]): r for r in rows if r["splits"] == "1"}
    au = {int(r["seq_kv"]): r for r in rows if r["splits"] == ""}
    print("\n### Split-KV: B = 1, H = 32, Hkv = 1 (multi-query), d = 128, Nq = 1, tiled\n")
    print("| Nk | unsplit (--splits 1) | split (auto) | speedup |")
    print("|---|---|---|---|")
    sp = {}
    for n in sorted(set(un) & set(au)):
        sp[n] = ms(un[n]) / ms(au[n])
        print(f"| {nk_label(n)} | {ms(un[n]):.3f} ms | {ms(au[n]):.3f} ms | {sp[n]:.2f}x |")
    big = [v for n, v in sp.items() if n >= 8192]
    if big:
        print(f"\nFrom Nk = 8K: {min(big):.2f}x to {max(big):.2f}x; below it: "
              + ", ".join(f"{v:.2f}x" for n, v in sorted(sp.items()) if n < 8192) + ".")


def prefill_table(rows):
    print("\n### Grouped-query prefill: H = 32, d = 128; Hkv = 8 against Hkv = 32 "
          "(same query heads, same FLOPs)\n")
    backends = [b for b in ("tiled", "onednn", "blas", "naive") if any(r["backend"] == b for r in rows)]
    print("| N | causal | K/V bytes 32 / 8 | tiled % roof 32 / 8 | " +
          " | ".join(f"{b} Hkv=32 | {b} Hkv=8 | {b} 8/32" for b in backends) + " |")
    print("|---|---|---|---|" + "---|---|---|" * len(backends))
    cases = {}
    for r in rows:
        cases.setdefault((r["causal"], int(r["seq_q"])), {})[(r["backend"], int(r["kv_heads"]))] = r
    tiled_ratio = []
    for k in sorted(cases):
        c = cases[k]
        kv = [c[x] for x in c if x[1] == 32][:1], [c[x] for x in c if x[1] == 8][:1]
        ratio = f"{int(kv[0][0]['kv_bytes']) / int(kv[1][0]['kv_bytes']):.0f}x" if kv[0] and kv[1] else "-"
        t32, t8 = c.get(("tiled", 32)), c.get(("tiled", 8))
        roof = f"{pct(t32):.0f}% / {pct(t8):.0f}%" if t32 and t8 else "-"
        cells = []
        for b in backends:
            a, g = c.get((b, 32)), c.get((b, 8))
            cells += [f"{ms(a):.1f} ms" if a else "-", f"{ms(g):.1f} ms" if g else "-",
                      f"{ms(g) / ms(a):.2f}" if a and g else "-"]
            if b == "tiled" and a and g:
                tiled_ratio.append(ms(g) / ms(a))
        print(f"| {k[1]} | {'yes' if k[0] == '1' else 'no'} | {ratio} | {roof} | "
              + " | ".join(cells) + " |")
    if tiled_ratio:
        print(f"\ntiled, Hkv = 8 over Hkv = 32 time: {min(tiled_ratio):.2f} to "
              f"{max(tiled_ratio):.2f}.")


def pages_table(d):
    """--huge-pages off against on, the median of the interleaved rounds."""
    runs = {}
    for pages in ("off", "on"):
        for name in sorted(os.listdir(d)):
            if re.fullmatch(rf"pages-{pages}-[0-9]+\.csv", name):
                for r in load(os.path.join(d, name)):
                    k = (int(r["batch"]), -int(r["kv_heads"]), int(r["seq_kv"]), r["kv_dtype"])
                    runs.setdefault(k, {}).setdefault(pages, []).append(r)
    if not runs:
        return
    n = max(len(v) for c in runs.values() for v in c.values())
    print(f"\n### Huge pages: tiled decoding with its inputs on 4 KiB pages (`--huge-pages off`) "
          f"and on 2 MiB pages (the default), H = 32, d = 128, Nq = 1; the median of {n} "
          f"interleaved runs each\n")
    print("Each time: the median, and in brackets the fastest and slowest round: where the "
          "two sides' ranges overlap, the rounds do not separate them.\n")
    print("| B | Hkv | Nk | K/V | 4 KiB pages | huge pages | speedup | huge pages GB/s |")
    print("|---|---|---|---|---|---|---|---|")
    sp = []

    def spread(rs):
        t = [ms(r) for r in rs]
        return f"{statistics.median(t):.3f} ms ({min(t):.3f}-{max(t):.3f})"
    for k in sorted(runs):
        c = runs[k]
        if "off" not in c or "on" not in c:
            continue
        off = statistics.median(ms(r) for r in c["off"])
        on = statistics.median(ms(r) for r in c["on"])
        gbs = statistics.median(float(r["gbs"]) for r in c["on"])
        sp.append(off / on)
        print(f"| {k[0]} | {-k[1]} | {nk_label(k[2])} | {k[3]} | {spread(c['off'])} | "
              f"{spread(c['on'])} | {off / on:.2f}x | {gbs:.1f} |")
    if sp:
        print(f"\nHuge pages over 4 KiB pages: {min(sp):.2f}x to {max(sp):.2f}x "
              f"(median {statistics.median(sp):.2f}x).")


def main():
    if len(sys.argv) != 2:
        csvload.die("decode_tables.py", "usage: decode_tables.py RESULTS_DIR")
    d = sys.argv[1]
    peaks(d)
    decode_table(load(os.path.join(d, "decode.csv")))
    targets_table(load(os.path.join(d, "targets.csv")))
    splits_table(load(os.path.join(d, "splits.csv")))
    prefill_table(load(os.path.join(d, "prefill.csv")))
    pages_table(d)


if __name__ == "__main__":
    main()
