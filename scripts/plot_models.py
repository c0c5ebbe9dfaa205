"""The charts of results/models from its CSVs: one per phase, each a line per
--model preset.

    python3 scripts/plot_models.py results/models [--machine TEXT]

prefill.png  tiled's GFLOP/s (over the pairs each preset's masks and window
             leave visible) against N, the bf16 peak drawn; and tiled's
             speedup over onednn for the presets onednn computes.
decode.png   tiled's % of the roofline against Nk (the time this machine
             cannot beat: the least bytes at the measured bandwidth, or the
             FLOPs at the peak); and its GB/s.
"""
import argparse
import os
import sys

import chartstyle
import csvload

NEED = ["backend", "verdict", "model", "seq_q", "seq_kv", "gflops", "peak_gflops",
        "pct_roofline", "gbs", "roofline_gbs", "real_median_s"]
PROG = "plot_models.py"


def load(path):
    rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV of schema 8 or later",
                            "run scripts/results-models")
    ok = [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"] and r["model"]]
    if not ok:
        csvload.die(PROG, f"{path}: no PASSED, timed rows of a --model preset ({len(rows)} rows)")
    return ok


def by_model(rows, backend, x):
    out = {}
    for r in rows:
        if r["backend"] == backend:
            out.setdefault(r["model"], {})[int(r[x])] = r
    return out


def order(names):
    known = list(chartstyle.MODELS)
    return sorted(names, key=lambda n: known.index(n) if n in known else len(known))


def speedups(rows, x):
    """tiled's time over onednn's, per preset and x, where both ran."""
    t, o = by_model(rows, "tiled", x), by_model(rows, "onednn", x)
    out = {}
    for m in t:
        for n, r in t[m].items():
            if n in o.get(m, {}):
                out.setdefault(m, {})[n] = (float(o[m][n]["real_median_s"]) /
                                            float(r["real_median_s"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        csvload.die(PROG, "matplotlib is missing (Debian: apt-get install python3-matplotlib)")
    chartstyle.outdir(a.dir, PROG)
    sub = f"\n{a.machine}" if a.machine else ""

    def save(fig, axes, name, title):
        head = fig.suptitle(title + sub, fontsize=11)
        fig.tight_layout(rect=(0, 0, 1, 0.93))
        leg = chartstyle.legend_outside(fig, axes)
        for ext in ("png", "svg"):
            path = os.path.join(a.dir, f"{name}.{ext}")
            fig.savefig(path, dpi=110, bbox_inches="tight",
                        bbox_extra_artists=[head, leg] if leg else [head])
            print(f"wrote {path}")
        plt.close(fig)

    def ceiling(ax, y, text):
        """A dotted line at y, named at its left end."""
        ax.axhline(y, color="black", linestyle=":", linewidth=1)
        if text:
            ax.annotate(text, (0.02, y), xycoords=("axes fraction", "data"), va="bottom",
                        fontsize=8)

    def lines(ax, series, y):
        for m in order(series):
            xs = [n for n in sorted(series[m]) if y(series[m][n]) is not None]
            if xs:
                ax.plot(xs, [y(series[m][n]) for n in xs], label=m, **chartstyle.model_kw(m))
        xs = sorted({n for s in series.values() for n in s})
        if xs:
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [f"{n // 1024}K" if n >= 1024 else str(n) for n in xs])
            ax.minorticks_off()

    # prefill
    rows = load(os.path.join(a.dir, "prefill.csv"))
    tiled = by_model(rows, "tiled", "seq_q")
    if not tiled:
        csvload.die(PROG, "prefill.csv: no PASSED tiled rows")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.8, 4.8))
    lines(ax1, tiled, lambda r: float(r["gflops"]))
    peak = max(float(r["peak_gflops"] or 0) for r in rows if r["backend"] == "tiled")
    if peak:
        ceiling(ax1, peak, f"bf16 peak {peak:.0f} GFLOP/s")
    ax1.set(xlabel="sequence length N", ylabel="GFLOP/s (visible pairs)",
            title="tiled, bf16, B = 1", ylim=(0, peak * 1.1 if peak else None))
    sp = speedups(rows, "seq_q")
    lines(ax2, {m: {n: {"s": v} for n, v in s.items()} for m, s in sp.items()},
          lambda r: r["s"])
    ceiling(ax2, 1.0, None)
    ax2.set(xlabel="sequence length N", ylabel="onednn time / tiled time",
            title="tiled against onednn (the presets onednn computes)")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
    save(fig, [ax1, ax2], "prefill", "Prefill of each --model preset (causal as the model is)")

    # decode
    rows = load(os.path.join(a.dir, "decode.csv"))
    tiled = by_model(rows, "tiled", "seq_kv")
    if not tiled:
        csvload.die(PROG, "decode.csv: no PASSED tiled rows")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.8, 4.8))
    roof = [float(r["pct_roofline"]) for m in tiled.values() for r in m.values()
            if r["pct_roofline"]]
    lines(ax1, tiled, lambda r: float(r["pct_roofline"]) if r["pct_roofline"] else None)
    if not roof:
        ax1.text(0.5, 0.5, "no roofline: the run measured no peak (attnbench --peak)",
                 transform=ax1.transAxes, ha="center", fontsize=9)
    ceiling(ax1, 100, None)
    ax1.set(xlabel="key length Nk (the KV cache)", ylabel="% of the roofline",
            title="tiled, bf16, B = 1, Nq = 1 (roofline at peak.log's bandwidth)",
            ylim=(0, max([110] + [10 + x for x in roof])))
    lines(ax2, tiled, lambda r: float(r["gbs"]))
    bw = max(float(r["roofline_gbs"] or 0) for r in rows if r["backend"] == "tiled")
    if bw:
        ceiling(ax2, bw, f"measured bandwidth {bw:.0f} GB/s")
    ax2.set(xlabel="key length Nk (the KV cache)", ylabel="GB/s (least bytes / time)",
            title="tiled's bandwidth (the latent preset is compute-bound)")
    ax2.set_yscale("log")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
    save(fig, [ax1, ax2], "decode", "Decoding of each --model preset against its KV cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
