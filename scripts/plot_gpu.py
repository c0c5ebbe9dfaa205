"""The chart of results/gpu (gpu.png, gpu.svg) from the CSV scripts/results-gpu
wrote: prefill GFLOP/s against N for vulkan, vulkan-3pass and PyTorch's SDPA
on the same GPU (torch-sdpa-cuda), a line per storage type, a panel per d
and mask; and decoding's GB/s against Nk, a panel per number of K/V heads.
Log scales: the rates are orders of magnitude apart.

    python3 scripts/plot_gpu.py gpu.csv --out DIR [--machine TEXT]
"""
import argparse
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import chartstyle  # noqa: E402
import csvload  # noqa: E402

BACKENDS = ["vulkan", "vulkan-3pass", "torch-sdpa-cuda"]


def style(backend, dtype):
    base = chartstyle.kw("torch-sdpa" if backend == "torch-sdpa-cuda" else backend)
    return chartstyle.storage_kw(f"{backend} {dtype}" if dtype != "fp32" else backend, base)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    rows = csvload.read_csv(a.csv, ["backend", "verdict", "seq_q", "seq_kv", "d_k", "causal",
                                    "dtype", "batch", "heads", "kv_heads", "gflops", "gbs"],
                            "plot_gpu.py", "an attnbench CSV", "run scripts/results-gpu")
    rows = [r for r in rows if r["verdict"] == "PASSED" and r["gflops"]]
    if not rows:
        csvload.die("plot_gpu.py", f"{a.csv}: no PASSED row to draw")
    chartstyle.outdir(a.out, "plot_gpu.py")
    prefill = [r for r in rows if int(r["seq_q"]) > 1]
    decode = [r for r in rows if int(r["seq_q"]) == 1]
    panels = sorted({(int(r["d_k"]), r["causal"]) for r in prefill})
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    axes = axes.ravel()
    for ax, (d, causal) in zip(axes, panels):
        for b in BACKENDS:
            for dt in ("fp32", "fp16", "bf16"):
                pts = sorted((int(r["seq_q"]), float(r["gflops"])) for r in prefill
                             if r["backend"] == b and r["dtype"] == dt and int(r["d_k"]) == d
                             and r["causal"] == causal)
                if pts:
                    ax.plot(*zip(*pts), label=f"{b} {dt}", **style(b, dt))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"prefill, d={d}{', causal' if causal == '1' else ''}")
        ax.set_xlabel("N = Nq = Nk")
        ax.set_ylabel("GFLOP/s (visible pairs)")
        ax.grid(True, which="both", alpha=0.3)
    def hkv(r):
        return int(r["kv_heads"] or r["heads"])
    kinds = sorted({hkv(r) for r in decode}, reverse=True)
    if len(panels) + len(kinds) > len(axes):
        csvload.die("plot_gpu.py", f"{a.csv}: {len(panels)} prefill and {len(kinds)} decoding "
                    f"panels do not fit the {len(axes)} of the chart")
    for ax, kv in zip(axes[len(panels):], kinds):
        rs = [r for r in decode if hkv(r) == kv]
        for b in BACKENDS:
            for dt in ("fp32", "fp16", "bf16"):
                for batch in sorted({int(r["batch"]) for r in rs}):
                    pts = sorted((int(r["seq_kv"]), float(r["gbs"])) for r in rs
                                 if r["backend"] == b and r["dtype"] == dt and
                                 int(r["batch"]) == batch)
                    if pts:
                        # The colour for the backend, the marker for B, the
                        # line for the storage type.
                        kw = style(b, dt)
                        kw["marker"] = "o" if batch == 1 else "s"
                        kw["linestyle"] = {"fp32": "-", "fp16": "-.", "bf16": "--"}[dt]
                        ax.plot(*zip(*pts), label=f"{b} {dt}, decode B={batch}", **kw)
        r0 = rs[0]
        ax.set_title(f"decoding, Nq=1, H={r0['heads']}, Hkv={kv}, d={r0['d_k']}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("Nk")
        ax.set_ylabel("GB/s (K, V, Q, O once)")
        ax.grid(True, which="both", alpha=0.3)
    for extra in axes[len(panels) + len(kinds):]:
        extra.axis("off")
    head = fig.suptitle("attnbench on a GPU: vulkan, vulkan-3pass and PyTorch SDPA (CUDA)" +
                        (f"\n{a.machine}" if a.machine else ""))
    leg = chartstyle.legend_outside(fig, axes)
    fig.tight_layout()
    for ext in ("png", "svg"):
        path = os.path.join(a.out, f"gpu.{ext}")
        fig.savefig(path, dpi=110, bbox_inches="tight",
                    bbox_extra_artists=[head, leg] if leg else [head])
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
