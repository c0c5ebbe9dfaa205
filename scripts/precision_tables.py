"""The tables of results/precision from its CSVs, as Markdown on stdout: for
each backend and shape, fp32 against bf16 and fp16 storage (time, GFLOP/s or
GB/s, % of the peak that applies, the speedup over fp32 of the same run,
the error against the double reference, the bytes of K and V); then the
verdicts per tolerance class, the ranges per backend and type, and the
targets. Every figure of results/precision/README.md is here.

    python3 scripts/precision_tables.py results/precision
"""
import os
import sys

import csvload

NEED = ["backend", "verdict", "reason", "seq_q", "seq_kv", "d_k", "causal", "dtype",
        "kv_dtype", "real_median_s", "gflops", "gbs", "pct_peak", "pct_bw", "max_abs",
        "nmse", "tol", "tol_class", "kv_bytes"]
PROG = "precision_tables.py"
TYPES = ("fp32", "bf16", "fp16")


def load(path):
    if not os.path.exists(path):
        return []
    rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV (schema 5)",
                            "run scripts/results-precision")
    for r in rows:
        if r["verdict"] not in ("PASSED", "SKIPPED"):
            print(f"{PROG}: {path}: {r['backend']} {r['dtype']} N={r['seq_q']}/{r['seq_kv']} "
                  f"d={r['d_k']}: {r['verdict']} {r['reason']}", file=sys.stderr)
    return rows


def nlabel(n):
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def tmark(s):
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def mib(b):
    return f"{int(b) / 2**20:.0f} MiB"


def table(rows, decode):
    by = {}
    skipped = {}
    for r in rows:
        k = (r["backend"], int(r["d_k"]), int(r["causal"]),
             int(r["seq_kv"]) if decode else int(r["seq_q"]))
        if r["verdict"] == "PASSED" and r["real_median_s"]:
            by.setdefault(k, {})[r["dtype"]] = r
        elif r["verdict"] == "SKIPPED":
            skipped.setdefault((r["backend"], r["dtype"]), r["reason"])
    rate = "GB/s" if decode else "GFLOP/s"
    key = "Nk" if decode else "N"
    print(f"| backend | d | causal | {key} | fp32 | " +
          " | ".join(f"{t} | {t} speedup | {t} max_abs / NMSE" for t in TYPES[1:]) +
          " | K/V bytes fp32 / 16-bit |")
    print("|---|---|---|---|---|" + "---|---|---|" * 2 + "---|")
    speed = {}
    for k in sorted(by):
        be, d, c, n = k
        cell = by[k]
        f = cell.get("fp32")

        def show(r):
            x = float(r["gbs" if decode else "gflops"])
            pct = r["pct_bw" if decode else "pct_peak"]
            return f"{tmark(float(r['real_median_s']))}, {x:.0f} {rate}" + \
                (f" ({float(pct):.0f}%)" if pct else "")
        txt = [show(f) if f else "-"]
        for t in TYPES[1:]:
            r = cell.get(t)
            if not r:
                txt += ["-", "-", "-"]
                continue
            sp = float(f["real_median_s"]) / float(r["real_median_s"]) if f else None
            if sp:
                speed.setdefault((be, t), []).append((sp, d, c, n))
            txt += [show(r), f"{sp:.2f}x" if sp else "-",
                    f"{float(r['max_abs']):.1e} / {float(r['nmse']):.1e}"]
        half = next((cell[t]["kv_bytes"] for t in TYPES[1:] if t in cell), None)
        kv = (mib(f["kv_bytes"]) if f else "-") + " / " + (mib(half) if half else "-")
        print(f"| {be} | {d} | {'yes' if c else 'no'} | {nlabel(n)} | " + " | ".join(txt) +
              f" | {kv} |")
    print()
    for (be, t), xs in sorted(speed.items()):
        lo = min(xs)
        print(f"- {be} {t} over fp32: {lo[0]:.2f}x to {max(xs)[0]:.2f}x (least at d = {lo[1]}, "
              f"{'causal' if lo[2] else 'not causal'}, {key} = {nlabel(lo[3])}).")
    for (be, t), why in sorted(skipped.items()):
        print(f"- {be} {t}: SKIPPED: {why}")
    print()
    print("| backend | type | % of its peak" + (" (bandwidth)" if decode else "") +
          " | NMSE | max_abs |")
    print("|---|---|---|---|---|")
    for be in sorted({k[0] for k in by}):
        for t in TYPES:
            rs = [c[t] for k, c in by.items() if k[0] == be and t in c]
            if not rs:
                continue
            pc = [float(r["pct_bw" if decode else "pct_peak"]) for r in rs
                  if r["pct_bw" if decode else "pct_peak"]]
            pcs = f"{min(pc):.0f}% to {max(pc):.0f}%" if pc else "-"
            nm = [float(r["nmse"]) for r in rs]
            ma = [float(r["max_abs"]) for r in rs]
            print(f"| {be} | {t} | {pcs} | {min(nm):.1e} to {max(nm):.1e} | "
                  f"{min(ma):.1e} to {max(ma):.1e} |")
    print()
    return by


def ratio_range(by, a, b, t):
    """a's time over b's in type t, over the shapes both ran."""
    xs = [float(by[(a,) + k[1:]][t]["real_median_s"]) / float(c[t]["real_median_s"])
          for k, c in by.items() if k[0] == b and t in c and (a,) + k[1:] in by and
          t in by[(a,) + k[1:]]]
    return (min(xs), max(xs)) if xs else None


def targets(pre, dec):
    print("### Targets\n")
    sp = [(float(c["fp32"]["real_median_s"]) / float(c["bf16"]["real_median_s"]),
           float(c["bf16"]["nmse"])) for k, c in pre.items()
          if k[0] == "tiled" and k[1] == 128 and k[3] >= 2048 and "fp32" in c and "bf16" in c]
    if sp:
        lo, nm = min(x[0] for x in sp), max(x[1] for x in sp)
        print(f"- tiled bf16 >= 1.6x tiled fp32 at N >= 2048, d = 128, NMSE <= 1e-4: "
              f"{lo:.3f}x to {max(x[0] for x in sp):.2f}x, NMSE <= {nm:.1e}: "
              f"**{'met' if lo >= 1.6 and nm <= 1e-4 else 'not met'}**")
    dd = [(float(c["fp32"]["real_median_s"]) / float(c["bf16"]["real_median_s"]),
           int(c["fp32"]["kv_bytes"]) / int(c["bf16"]["kv_bytes"]), k[3])
          for k, c in dec.items() if k[0] == "tiled" and k[3] >= 16384 and "fp32" in c and "bf16" in c]
    if dd:
        lo = min(dd)
        print(f"- tiled bf16 decoding (Nk >= 16K) moves half the bytes and is >= 1.7x fp32: "
              f"bytes fp32 / bf16 {min(x[1] for x in dd):.2f} to {max(x[1] for x in dd):.2f}; "
              f"{lo[0]:.2f}x to {max(dd)[0]:.2f}x (least at Nk = {nlabel(lo[2])}): "
              f"**{'met' if lo[0] >= 1.7 else 'not met'}**")


def main():
    if len(sys.argv) != 2:
        csvload.die(PROG, "usage: precision_tables.py RESULTS_DIR")
    d = sys.argv[1]
    pre, dec = load(os.path.join(d, "prefill.csv")), load(os.path.join(d, "decode.csv"))
    if not pre and not dec:
        csvload.die(PROG, f"{d}: no prefill.csv or decode.csv (run scripts/results-precision)")
    print("## fp32, bf16 and fp16 storage (one run; speedup = fp32 time / this time)\n")
    print("% of peak: fp32 and fp16 cases against the fp32 FMA peak, bf16 cases against the "
          "bf16 dot-product peak where the CPU has one (attnbench --peak, peak.log). Errors "
          "are against the double-precision reference computed from the rounded inputs.\n")
    print("Verdicts: " + csvload.tally(r["tol_class"] if r["verdict"] == "PASSED" else r["verdict"]
                                       for r in pre + dec) +
          " (PASSED rows counted by the tolerance class they were held to).\n")
    bp, bd = {}, {}
    if pre:
        print("### Prefill: B = 1, H = 8\n")
        bp = table(pre, False)
        r = ratio_range(bp, "onednn", "tiled", "bf16")
        if r:
            print(f"onednn bf16 time over tiled bf16: {r[0]:.2f} to {r[1]:.2f}.\n")
    if dec:
        print("### Decoding: B = 1, H = 32, Hkv = 8, Nq = 1 (GB/s: the least bytes moved, "
              "% of the triad bandwidth)\n")
        bd = table(dec, True)
    targets(bp, bd)


if __name__ == "__main__":
    main()
