"""The chart of results/serving from the files scripts/results-serving wrote:
pages.png (paged decoding's time per run against the page size, one panel
per batch size: each round a dot, the median over the rounds a line, the
contiguous cache's median and the 1.05x target as horizontal lines). Also
as SVG.

    python3 scripts/plot_serving.py results/serving [--machine TEXT]
"""
import argparse
import os
import statistics

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import chartstyle  # noqa: E402
import csvload  # noqa: E402
from serving_tables import PAGE_TARGET, pick, rows_of  # noqa: E402

PROG = "plot_serving.py"


def pages_chart(d, rows, machine):
    batches = sorted({int(r["batch"]) for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(5.5 * len(batches), 4.2), squeeze=False)
    for ax, b in zip(axes[0], batches):
        sizes = sorted({int(r["page"]) for r in rows if int(r["batch"]) == b and r["page"]})
        ms = {p: [float(r["real_median_s"]) * 1e3 for r in pick(rows, batch=b, page=p)]
              for p in sizes}
        for p in sizes:
            ax.plot([p] * len(ms[p]), ms[p], linestyle="none", marker="o", markersize=3,
                    color="#999999", label="a round")
        ax.plot(sizes, [statistics.median(ms[p]) for p in sizes], label="paged, median",
                **chartstyle.kw("tiled"))
        base = [float(r["real_median_s"]) * 1e3 for r in pick(rows, batch=b, page="")]
        if base:
            c = statistics.median(base)
            ax.axhline(c, color="#333333", linestyle="--", label="contiguous, median")
            ax.axhline(c * PAGE_TARGET, color="#333333", linestyle=":",
                       label=f"target: {PAGE_TARGET:.2f}x contiguous")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(p) for p in sizes])
        ax.set_xlabel("page size (tokens)")
        ax.set_ylabel("time per run (ms)")
        ax.set_title(f"B = {b}")
        ax.grid(True, which="both", alpha=0.3)
    legend = chartstyle.legend_outside(fig, axes[0])
    fig.suptitle("tiled paged decoding, Llama-3.1-8B (H=32, Hkv=8, d=128), bf16, Nq=1, "
                 f"Nk=32K\n{machine}", fontsize=10)
    fig.tight_layout()
    extra = [legend] if legend else []
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(d, f"pages.{ext}"), dpi=130, bbox_inches="tight",
                    bbox_extra_artists=extra)
    plt.close(fig)
    print(f"wrote {os.path.join(d, 'pages')}.png, .svg")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    chartstyle.outdir(a.dir, PROG)
    rows = rows_of(a.dir, "paged-*.csv")
    if not any(r["page"] for r in rows):
        csvload.die(PROG, f"{a.dir}/paged-*.csv: no PASSED paged row to draw")
    pages_chart(a.dir, rows, a.machine)


if __name__ == "__main__":
    main()
