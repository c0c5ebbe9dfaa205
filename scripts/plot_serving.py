"""The charts of results/serving from the files scripts/results-serving
wrote: pages.png (paged decoding's time per run against the page size, one
panel per batch size: each round a dot, the median over the rounds a line,
the contiguous cache's median and the 1.05x target as horizontal lines) and,
where its batch-*.csv are there, batch.png (decoding's throughput and % of
the roofline against the batch size, a line per layout of the cache). Also
as SVG.

    python3 scripts/plot_serving.py results/serving [--machine TEXT]
"""
import argparse
import statistics

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import chartstyle  # noqa: E402
import csvload  # noqa: E402
from serving_tables import PAGE_TARGET, layout, pick, rows_of  # noqa: E402

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
    chartstyle.save(fig, legend, d, "pages")


def batch_chart(d, rows, machine):
    pages = sorted({r["page"] for r in rows}, key=lambda p: int(p or 0))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    looks = [dict(color="#d62728", marker="s"), dict(color="#1f77b4", marker="o"),
             dict(color="#2ca02c", marker="^"), dict(color="#7f7f7f", marker="D")]
    for page, look in zip(pages, looks):
        sel = pick(rows, page=page)
        bs = sorted({int(r["batch"]) for r in sel})
        for ax, col in zip(axes, ("tokens_per_s", "pct_roofline")):
            # % of the roofline is blank where no peak was measured
            vals = {b: [float(r[col]) for r in pick(sel, batch=b) if r[col]] for b in bs}
            has = [b for b in bs if vals[b]]
            for b in has:
                ax.plot([b] * len(vals[b]), vals[b], linestyle="none", marker="o",
                        markersize=3, color="#999999", label="a round")
            if has:
                ax.plot(has, [statistics.median(vals[b]) for b in has],
                        label=f"{layout(page)}, median", linestyle="-", markersize=5, **look)
    allb = sorted({int(r["batch"]) for r in rows})
    for ax, ylabel in zip(axes, ("tokens/s (requests/s)", "% of the roofline")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(allb)
        ax.set_xticklabels([str(b) for b in allb])
        ax.set_xlabel("batch size B (requests)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylim(bottom=0)   # linear from 0: how flat it is is the point
    # to 100%, or past it where a case beat its roofline (a bandwidth probe that read
    # less than the case then moved): no point cut off
    tops = [y for line in axes[1].lines for y in line.get_ydata()]
    axes[1].set_ylim(0, max([100.0] + [1.05 * y for y in tops]))
    if not axes[1].lines:
        axes[1].text(0.5, 0.5, "no peak measured (attnbench --peak):\n% of the roofline unknown",
                     ha="center", va="center", transform=axes[1].transAxes)
    axes[0].set_title("throughput")
    axes[1].set_title("% of the roofline (bandwidth probed beside each case)")
    legend = chartstyle.legend_outside(fig, axes)
    nk = ", ".join(str(n) for n in sorted({int(r["seq_kv"]) for r in rows}))
    fig.suptitle("tiled decoding against the batch size, Llama-3.1-8B (H=32, Hkv=8, d=128), "
                 f"bf16, Nq=1, Nk={nk} per request\n{machine}", fontsize=10)
    fig.tight_layout()
    chartstyle.save(fig, legend, d, "batch")


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
    batch = rows_of(a.dir, "batch-*.csv")
    if batch:
        batch_chart(a.dir, batch, a.machine)


if __name__ == "__main__":
    main()
