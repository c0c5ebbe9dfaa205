"""The tables of results/quant from its CSVs, peak logs and O dumps, as
Markdown on stdout: the machine's ceilings, decoding from each quantized
cache against bf16 (time, GB/s, % of the roofline, speedup), the targets'
verdicts, prefill, and the error each format costs. Every figure of
results/quant/README.md is here; all numbers of one table come from one run.

    python3 scripts/quant_tables.py results/quant
"""
import os
import sys

import numpy as np

import csvload
from decode_tables import mib, ms, nk_label, peaks

NEED = ["backend", "verdict", "reason", "batch", "seq_q", "seq_kv", "dtype", "kv_dtype", "fill",
        "real_median_s", "gbs", "pct_bw", "gflops", "pct_peak", "kv_bytes", "pct_roofline",
        "bound", "quant_nmse", "quant_max_abs"]
FORMATS = ["q8_0", "q4_0", "fp8e4m3", "fp8e5m2"]
# The issue's targets: time against bf16's, and % of the roofline.
TIME_TARGET = {"q8_0": 0.6, "q4_0": 0.4, "fp8e4m3": 0.6, "fp8e5m2": 0.6}
ROOF_TARGET = 70.0


def load(d, name):
    path = os.path.join(d, name)
    rows = csvload.read_csv(path, NEED, "quant_tables.py", "an attnbench CSV of schema 11",
                            "run scripts/results-quant")
    for r in rows:
        if r["verdict"] not in ("PASSED", "SKIPPED"):
            print(f"quant_tables.py: {path}: {r['kv_dtype']} B={r['batch']} Nk={r['seq_kv']}: "
                  f"{r['verdict']} {r['reason']}", file=sys.stderr)
    return [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]


def find(rows, **want):
    for r in rows:
        if all(r[k] == str(v) for k, v in want.items()):
            return r
    return None


def decode_table(rows, q="fp32"):
    rows = [r for r in rows if r["dtype"] == q]
    if q == "fp32":
        print("\n### Decoding: Llama-3.1-8B (H = 32, Hkv = 8, d = 128), Nq = 1, Q fp32\n")
        print("Time of each quantized cache against bf16 K/V in the same run, its GB/s (the "
              "bytes it reads, at its stored width), % of its roofline, and the verdicts of "
              f"the targets (time <= {TIME_TARGET['q8_0']}x bf16's for q8_0 and fp8, "
              f"<= {TIME_TARGET['q4_0']}x for q4_0, and >= {ROOF_TARGET:.0f}% of the "
              "roofline; targets at Nk = 32K and 128K).\n")
    else:
        print(f"\n### Decoding with Q in {q} (decode-q8.csv)\n")
        print(f"The same shapes with Q rounded to {q} (llama.cpp's rounding of Q for its "
              "q8_0 and q4_0 dot products; tiled computes Q.K^T in integers where the CPU "
              "has AVX512_VNNI), against bf16 K/V with the same Q in the same run (which "
              "takes the fp32 path: Q's rounded values in fp32). The targets as above.\n")
    print("| B | Nk | K/V | median | K/V bytes | GB/s | % roof | time / bf16 | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for b in sorted({int(r["batch"]) for r in rows}):
        for nk in sorted({int(r["seq_kv"]) for r in rows}):
            base = find(rows, batch=b, seq_kv=nk, kv_dtype="bf16")
            for kv in ["bf16"] + FORMATS:
                r = find(rows, batch=b, seq_kv=nk, kv_dtype=kv)
                if not r:
                    continue
                ratio = ms(r) / ms(base) if base and kv != "bf16" else None
                verdict = "-"
                if ratio is not None and nk in (32768, 131072):
                    ok = ratio <= TIME_TARGET[kv] and float(r["pct_roofline"]) >= ROOF_TARGET
                    verdict = "met" if ok else "missed"
                print(f"| {b} | {nk_label(nk)} | {kv} | {ms(r):.3f} ms | "
                      f"{mib(float(r['kv_bytes']))} | {float(r['gbs']):.1f} | "
                      f"{float(r['pct_roofline']):.0f} | "
                      f"{f'{ratio:.2f}x' if ratio is not None else '-'} | {verdict} |")


def prefill_table(rows):
    print("\n### Prefill: the same preset, N = 4096, causal\n")
    print("GFLOP/s over the visible pairs, and the rate against bf16 K/V with the same Q "
          "(the target: >= 0.8x for q8_0).\n")
    print("| Q | K/V | median | GFLOP/s | % peak | rate / bf16's |")
    print("|---|---|---|---|---|---|")
    for q in ("fp32", "bf16"):
        base = find(rows, dtype=q, kv_dtype="bf16")
        for kv in ["bf16"] + FORMATS:
            r = find(rows, dtype=q, kv_dtype=kv)
            if not r:
                continue
            rate = float(r["gflops"]) / float(base["gflops"]) if base and kv != "bf16" else None
            print(f"| {q} | {kv} | {ms(r):.1f} ms | {float(r['gflops']):.0f} | "
                  f"{float(r['pct_peak']):.0f} | {f'{rate:.2f}x' if rate is not None else '-'} |")


def dumped_error(d, fill, nk, kv):
    """bf16's or fp16's O against fp32 K/V's O on the same inputs (the
    dumps): (nmse, max_abs), or None when the dumps are missing."""
    a, b = (os.path.join(d, "accuracy", f"{fill}-{nk}-{x}.npy") for x in ("fp32", kv))
    if not (os.path.exists(a) and os.path.exists(b)):
        return None
    ref, out = np.load(a).astype(np.float64), np.load(b).astype(np.float64)
    return float(((out - ref) ** 2).sum() / (ref ** 2).sum()), float(np.abs(out - ref).max())


def accuracy_table(d, rows):
    q8 = [r for r in rows if r["dtype"] == "q8_0"]
    rows = [r for r in rows if r["dtype"] == "fp32"]
    print("\n### The error each format costs\n")
    print("The output against exact attention on K and V before quantization "
          "(`quant_nmse`, `quant_max_abs`: the double reference on the unquantized "
          "values); for bf16 and fp16 K/V, whose rows carry no such figure, the output "
          "against the same backend's with fp32 K/V (whose own error, about 1e-13 in nmse, "
          "is far below). Llama-3.1-8B preset, B = 1, Nq = 1; `--fill extreme` puts "
          "integer Q and K in [-100, 100] (logits to about 1e4).\n")
    print("Rows with Q in q8_0 measure against exact attention on Q, K and V all before "
          "rounding: Q's share of the error is the difference to the row above them.\n")
    print("| fill | Nk | Q | K/V | nmse | max_abs |")
    print("|---|---|---|---|---|---|")
    for fill in ("normal", "extreme"):
        for nk in sorted({int(r["seq_kv"]) for r in rows}):
            for kv in ["bf16", "fp16"] + FORMATS:
                if kv in ("bf16", "fp16"):
                    e = dumped_error(d, fill, nk, kv)
                    if e:
                        print(f"| {fill} | {nk_label(nk)} | fp32 | {kv} | {e[0]:.2e} | "
                              f"{e[1]:.2e} |")
                    continue
                for q, src in (("fp32", rows), ("q8_0", q8)):
                    r = find(src, fill=fill, seq_kv=nk, kv_dtype=kv)
                    if r:
                        print(f"| {fill} | {nk_label(nk)} | {q} | {kv} | "
                              f"{float(r['quant_nmse']):.2e} | {float(r['quant_max_abs']):.2e} |")


def main():
    if len(sys.argv) != 2:
        csvload.die("quant_tables.py", "usage: quant_tables.py RESULTS_DIR")
    d = sys.argv[1]
    print("# results/quant: the tables\n")
    print("Written by `scripts/quant_tables.py` from this folder's CSVs, logs and dumps.\n")
    peaks(d)
    decode_table(load(d, "decode.csv"))
    if os.path.exists(os.path.join(d, "decode-q8.csv")):
        decode_table(load(d, "decode-q8.csv"), "q8_0")
    prefill_table(load(d, "prefill.csv"))
    accuracy_table(d, load(d, "accuracy.csv"))


if __name__ == "__main__":
    main()
