"""The charts of results/quant from the files scripts/results-quant wrote:
decode.png (time and GB/s against Nk, one line per K/V storage type, B = 1
and 8; dashed, q8_0 and q4_0 with Q in q8_0 as well, from decode-q8.csv
where the run has it) and accuracy.png (each format's error against its decoding time
relative to bf16's: one point per format, Nk = 32K, B = 1, --fill normal).
Each also as SVG.

    python3 scripts/plot_quant.py results/quant [--machine TEXT]
"""
import argparse
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import chartstyle  # noqa: E402
import csvload  # noqa: E402
from quant_tables import FORMATS, dumped_error, find, load  # noqa: E402

KV = ["bf16"] + FORMATS


def decode_chart(d, rows, machine, q8=()):
    batches = sorted({int(r["batch"]) for r in rows})
    fig, axes = plt.subplots(2, len(batches), figsize=(5.5 * len(batches), 8), squeeze=False)
    for col, b in enumerate(batches):
        for row, (what, label) in enumerate((("real_median_s", "time per run (ms)"),
                                             ("gbs", "GB/s (bytes read at the stored width)"))):
            ax = axes[row][col]
            for kv in KV:
                pts = sorted((int(r["seq_kv"]), float(r[what]) * (1e3 if row == 0 else 1))
                             for r in rows if int(r["batch"]) == b and r["kv_dtype"] == kv)
                if pts:
                    ax.plot(*zip(*pts), label=kv, **chartstyle.kv_kw(kv))
            for kv in ("q8_0", "q4_0"):
                pts = sorted((int(r["seq_kv"]), float(r[what]) * (1e3 if row == 0 else 1))
                             for r in q8 if int(r["batch"]) == b and r["kv_dtype"] == kv)
                if pts:
                    ax.plot(*zip(*pts), label=f"{kv}, Q q8_0",
                            **chartstyle.kv_kw(kv, linestyle="--", markerfacecolor="none"))
            ax.set_xscale("log", base=2)
            if row == 0:
                ax.set_yscale("log")
            ax.set_xlabel("Nk (keys in the cache)")
            ax.set_ylabel(label)
            ax.set_title(f"B = {b}")
            ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("tiled decoding from bf16 and quantized K/V, Llama-3.1-8B (H=32, Hkv=8, "
                 f"d=128), Nq=1\n{machine}", fontsize=10)
    fig.tight_layout()
    chartstyle.save(fig, chartstyle.legend_outside(fig, axes.ravel()), d, "decode")


def accuracy_chart(d, dec, acc, machine):
    # Nk = 32K where the run has it, else the longest both files have
    common = {int(r["seq_kv"]) for r in dec} & {int(r["seq_kv"]) for r in acc}
    if not common:
        csvload.die("plot_quant.py", f"{d}: decode.csv and accuracy.csv share no Nk")
    nk = 32768 if 32768 in common else max(common)
    base = find(dec, batch=1, seq_kv=nk, kv_dtype="bf16")
    if not base:
        csvload.die("plot_quant.py", f"{d}/decode.csv: no PASSED bf16 row at B=1, Nk={nk}")
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for kv in KV:
        r = find(dec, batch=1, seq_kv=nk, kv_dtype=kv)
        if kv == "bf16":
            e = dumped_error(d, "normal", nk, "bf16")
            err = e[0] if e else None
        else:
            a = find(acc, fill="normal", seq_kv=nk, kv_dtype=kv, dtype="fp32")
            err = float(a["quant_nmse"]) if a else None
        if r and err:
            x = float(r["real_median_s"]) / float(base["real_median_s"])
            ax.plot([x], [err], label=kv, **chartstyle.kv_kw(kv, markersize=9, linestyle="none"))
            ax.annotate(kv, (x, err), textcoords="offset points", xytext=(7, 4), fontsize=8)
    ax.set_yscale("log")
    ax.margins(x=0.2, y=0.15)   # room for the labels
    ax.set_xlabel(f"decoding time / bf16's (B=1, Nk={nk // 1024}K)")
    ax.set_ylabel("nmse of O against exact attention\non K and V before quantization\n"
                  "(bf16: against fp32 K/V's O)")
    ax.set_title(f"what each K/V format costs and buys\n{machine}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    chartstyle.save(fig, None, d, "accuracy")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    chartstyle.outdir(a.dir, "plot_quant.py")
    dec = load(a.dir, "decode.csv")
    if not dec:
        csvload.die("plot_quant.py", f"{a.dir}/decode.csv: no PASSED row to draw")
    q8 = load(a.dir, "decode-q8.csv") if os.path.exists(os.path.join(a.dir, "decode-q8.csv")) \
        else []
    decode_chart(a.dir, dec, a.machine, q8)
    accuracy_chart(a.dir, dec, load(a.dir, "accuracy.csv"), a.machine)


if __name__ == "__main__":
    main()
