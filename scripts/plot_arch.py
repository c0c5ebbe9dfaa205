#!/usr/bin/env python3
"""Charts of `attnbench arch --csv FILE`: the RNN / CNN / self-attention comparison.

    python3 scripts/plot_arch.py arch.csv --out DIR [--short-max 512] [--machine TEXT]
                                 [--peers torch-arch.csv]

Writes DIR/arch_time.png (time per forward against N, N <= --short-max),
DIR/arch_relative.png (time relative to the CNN, with y = 1),
DIR/arch_memory.png (attention against the RNN: measured and analytic memory,
log scale) and DIR/arch_long.png (every N in the CSV: where attention's
quadratic term takes over; the crossover N is printed). With --peers (the CSV
of `scripts/peers arch`) PyTorch's times of the same models are drawn dashed
in the time charts. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import math
import os
import sys
import textwrap

import chartstyle
import csvload

MODELS = ["rnn", "cnn", "attention", "mha"]
LABELS = {"rnn": "LSTM + Linear", "cnn": "CNN (2 conv + LayerNorm)",
          "attention": "self-attention (1 head)", "mha": "multi-head attention layer (8 heads)"}


def die(msg):
    csvload.die("plot_arch.py", msg)


def load(path):
    need = ["model", "verdict", "seq", "median_s", "peak_bytes", "analytic_bytes", "batch",
            "dmodel", "threads", "time_vs_cnn"]
    rows = csvload.read_csv(path, need, "plot_arch.py", "an attnbench arch CSV",
                            f"run attnbench arch --csv {path}")
    if not rows:
        die(f"{path}: no rows (run attnbench arch --csv {path})")
    data = {}
    for r in rows:
        # PASSED: its output was checked (schema 2); OK: the unchecked schema 1.
        if r["verdict"] not in ("PASSED", "OK") or not r["median_s"]:
            continue
        data.setdefault(r["model"], []).append(r)
    if not data:
        die(f"{path}: no model ran (every row is SKIPPED or ERROR)")
    for m in data:
        data[m].sort(key=lambda r: int(r["seq"]))
    return rows[0], data


def crossover(a, b, key):
    """First N where a's value exceeds b's, log-log interpolated; the first N
    when it already does there; None if never."""
    pa = {int(r["seq"]): float(r[key]) for r in a if r[key]}
    pb = {int(r["seq"]): float(r[key]) for r in b if r[key]}
    ns = sorted(set(pa) & set(pb))
    for i, n in enumerate(ns):
        d1 = math.log(pa[n] / pb[n])
        if d1 > 0:
            if i == 0:
                return n
            n0 = ns[i - 1]
            d0 = math.log(pa[n0] / pb[n0])
            f = -d0 / (d1 - d0)
            return math.exp(math.log(n0) + f * (math.log(n) - math.log(n0)))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--short-max", type=int, default=512,
                    help="largest N of the first three charts (default 512)")
    ap.add_argument("--machine", default="", help="machine description for the titles")
    ap.add_argument("--peers", help="scripts/peers arch's CSV: the same models in PyTorch, "
                    "drawn dashed in the time charts")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is missing (Debian: apt-get install python3-matplotlib)")
    chartstyle.outdir(a.out, "plot_arch.py")
    first, data = load(a.csv)
    torch = {}
    if a.peers:
        for r in csvload.read_csv(a.peers, ["model", "verdict", "seq", "median_s"],
                                  "plot_arch.py", "a scripts/peers arch CSV",
                                  f"run scripts/peers arch --csv {a.peers}"):
            if r["verdict"] == "RAN" and r["median_s"]:
                torch.setdefault(r["model"].replace("torch-", ""), []).append(r)
        for m in torch:
            torch[m].sort(key=lambda r: int(r["seq"]))
    colors = {m: chartstyle.color(m) for m in MODELS}
    shape = f"B={first['batch']}, d_model={first['dmodel']}, {first['threads']} threads"
    where = f"{shape}{', ' + a.machine if a.machine else ''}"

    def xs(m, short=True):
        return [r for r in data.get(m, []) if not short or int(r["seq"]) <= a.short_max]

    def peer_lines(ax, short, key="median_s", scale=1e3, over=None):
        """PyTorch's runs of each model, dashed in the model's colour; over:
        the CNN's time per N to divide by (attnbench's, measured beside)."""
        for m in MODELS:
            rs = [r for r in torch.get(m, []) if not short or int(r["seq"]) <= a.short_max]
            if over is not None:
                rs = [r for r in rs if int(r["seq"]) in over]
            if rs:
                ax.plot([int(r["seq"]) for r in rs],
                        [float(r[key]) * scale / (over[int(r["seq"])] if over else 1)
                         for r in rs], color=colors[m], marker=chartstyle.marker(m),
                        markerfacecolor="white", linestyle=":", alpha=0.9,
                        label=f"{LABELS[m]}, PyTorch")

    def finish(fig, ax, title, ylabel, name, logx=True):
        ax.set_title(textwrap.fill(title, 75) + "\n" + textwrap.fill(where, 80), fontsize=10)
        ax.set_xlabel("sequence length N (tokens)")
        ax.set_ylabel(ylabel)
        if logx:
            ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
        # Outside the axes, under them: no line is hidden behind it.
        leg = ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
                        frameon=False)
        fig.tight_layout()
        path = os.path.join(a.out, name)
        fig.savefig(path, dpi=120, bbox_inches="tight", bbox_extra_artists=[leg])
        plt.close(fig)
        print(f"wrote {path}")

    # 1. time per forward
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in MODELS:
        rs = xs(m)
        if rs:
            ax.plot([int(r["seq"]) for r in rs], [float(r["median_s"]) * 1e3 for r in rs],
                    **chartstyle.kw(m), label=LABELS[m])
    peer_lines(ax, True)
    ax.set_yscale("log")
    finish(fig, ax, f"Time per forward pass (median), N <= {a.short_max}", "time (ms, log scale)",
           "arch_time.png")

    # 2. relative to the CNN
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in MODELS:
        rs = [r for r in xs(m) if r["time_vs_cnn"]]
        if rs:
            ax.plot([int(r["seq"]) for r in rs], [float(r["time_vs_cnn"]) for r in rs],
                    **chartstyle.kw(m), label=LABELS[m])
    cnn = {int(r["seq"]): float(r["median_s"]) for r in data.get("cnn", [])}
    peer_lines(ax, True, scale=1, over=cnn)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="CNN (y = 1)")
    ax.set_yscale("log")
    finish(fig, ax, f"Time relative to the CNN (attnbench's), N <= {a.short_max}",
           "time / CNN time (log scale)", "arch_relative.png")

    # 3. memory: attention against the RNN, measured and analytic
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m, color in (("attention", colors["attention"]), ("rnn", colors["rnn"])):
        rs = xs(m)
        if not rs:
            continue
        n = [int(r["seq"]) for r in rs]
        ax.plot(n, [int(r["peak_bytes"]) / 2**20 for r in rs], "o-", color=color,
                label=f"{LABELS[m]}: measured peak (activations + workspace)")
        an = [r for r in rs if r["analytic_bytes"]]
        if an:
            ax.plot([int(r["seq"]) for r in an], [float(r["analytic_bytes"]) / 2**20 for r in an],
                    "s--", color=color, alpha=0.7, label=f"{LABELS[m]}: analytic (the articles')")
    ax.set_yscale("log")
    finish(fig, ax, f"Memory against sequence length, N <= {a.short_max}", "MiB (log scale)",
           "arch_memory.png")

    # 4. every N: where attention's quadratic term takes over
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in MODELS:
        rs = xs(m, short=False)
        if rs:
            ax.plot([int(r["seq"]) for r in rs], [float(r["median_s"]) * 1e3 for r in rs],
                    **chartstyle.kw(m), label=LABELS[m])
    peer_lines(ax, False)
    notes = []
    for m in ("attention", "mha"):
        if m in data and "rnn" in data:
            c = crossover(data[m], data["rnn"], "median_s")
            ns = [int(r["seq"]) for r in data[m]]
            if c and c <= min(ns):
                notes.append(f"{m}: slower than the LSTM already at N = {min(ns)}")
            elif c:
                notes.append(f"{m}: slower than the LSTM from N = {c:.0f}")
                ax.axvline(c, color="gray", linestyle=":", linewidth=1)
            else:
                notes.append(f"{m}: faster than the LSTM up to N = {max(ns)}")
    if "attention" in data and "rnn" in data:
        c = crossover(data["attention"], data["rnn"], "analytic_bytes")
        n0 = min(int(r["seq"]) for r in data["attention"])
        if c:
            notes.append("analytic memory: attention above the LSTM " +
                         (f"already at N = {n0}" if c <= n0 else f"from N = {c:.0f}"))
    for line in notes:
        print("crossover: " + line)
    if notes:
        ax.text(0.98, 0.03, "\n".join(notes), transform=ax.transAxes, ha="right", va="bottom",
                fontsize=8, bbox=dict(boxstyle="round", facecolor="white", alpha=0.85))
    ax.set_yscale("log")
    every = sorted({int(r["seq"]) for rs in data.values() for r in rs})
    title = (f"Time per forward pass, every N of the run ({every[0]}..{every[-1]})"
             if every[-1] > a.short_max else
             f"Time per forward pass, every N of the run ({every[0]}..{every[-1]}: no N beyond "
             f"{a.short_max}; run attnbench arch --seq 64:4096:x2 for long sequences)")
    finish(fig, ax, title, "time (ms, log scale)", "arch_long.png")


if __name__ == "__main__":
    main()
