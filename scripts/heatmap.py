#!/usr/bin/env python3
"""Attention weights from `attnbench --dump-weights FILE.npy`: a query x key
heatmap per head, and the per-row analysis.

    python3 scripts/heatmap.py FILE.npy [--out DIR] [--batch B] [--tokens "a b c ..."]

FILE.npy holds P [B, H, Nq, Nk]. For batch item --batch (default 0) it writes
DIR/heatmap_h<h>.png per head (default DIR: beside FILE) and prints, per head,
the entropy of every row's distribution (nats; 0 = all weight on one key,
log(n) = uniform over n keys), the most concentrated and the most spread rows,
and the mean weight on the diagonal (key i' = i + Nk - Nq). Causal and local
masks show as the zero region of the picture. Needs numpy and matplotlib
(Debian: python3-numpy, python3-matplotlib).
"""
import argparse
import os
import sys


def die(msg):
    print(f"heatmap.py: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("npy")
    ap.add_argument("--out", help="directory for the PNGs (default: beside the .npy)")
    ap.add_argument("--batch", type=int, default=0, help="batch item to draw (default 0)")
    ap.add_argument("--tokens", help="space-separated token labels for the axes (Nk of them; "
                    "the last Nq label the queries)")
    a = ap.parse_args()
    try:
        import numpy as np
    except ImportError:
        die("numpy is missing (Debian: apt-get install python3-numpy)")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is missing (Debian: apt-get install python3-matplotlib)")
    try:
        p = np.load(a.npy)
    except (OSError, ValueError) as e:
        die(f"{a.npy}: {e}")
    if p.ndim != 4:
        die(f"{a.npy}: shape {p.shape} is not [B, H, Nq, Nk] (attnbench --dump-weights writes that)")
    B, H, nq, nk = p.shape
    if not 0 <= a.batch < B:
        die(f"--batch {a.batch}: the file has {B} batch item(s)")
    tokens = a.tokens.split() if a.tokens else None
    if tokens is not None and len(tokens) != nk:
        die(f"--tokens: {len(tokens)} labels for {nk} keys")
    out = a.out or os.path.dirname(os.path.abspath(a.npy))
    os.makedirs(out, exist_ok=True)
    offset = nk - nq
    for h in range(H):
        w = p[a.batch, h].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            # max(., 0): -0.0 for a one-hot row, and no negative rounding.
            ent = np.maximum(-np.where(w > 0, w * np.log(w), 0.0).sum(axis=1), 0.0)
        seen = w.sum(axis=1) > 0
        rows = np.flatnonzero(seen)
        print(f"head {h} (batch {a.batch}, {nq} queries x {nk} keys):")
        print("  entropy of each row (nats):")
        for r0 in range(0, nq, 8):
            cells = " ".join(f"{r:4d}:{ent[r]:6.3f}" if seen[r] else f"{r:4d}:     -"
                             for r in range(r0, min(nq, r0 + 8)))
            print("   " + cells)
        if rows.size:
            lo, hi = rows[np.argmin(ent[rows])], rows[np.argmax(ent[rows])]
            print(f"  most concentrated: row {lo} (entropy {ent[lo]:.3f} nats, max weight "
                  f"{w[lo].max():.3f} on key {int(w[lo].argmax())})")
            print(f"  most spread: row {hi} (entropy {ent[hi]:.3f} nats, {int((w[hi] > 0).sum())} "
                  f"keys with weight)")
        diag = [w[i, i + offset] for i in range(nq) if 0 <= i + offset < nk and seen[i]]
        if diag:
            print(f"  mean diagonal weight: {np.mean(diag):.4f} (uniform over the visible keys "
                  f"would give {np.mean([1 / max(1, (w[i] > 0).sum()) for i in rows]):.4f})")
        if (~seen).any():
            print(f"  rows with no visible key (all zero): {int((~seen).sum())}")

        fig, ax = plt.subplots(figsize=(6.4, 5.6))
        im = ax.imshow(w, cmap="viridis", aspect="auto", interpolation="nearest", vmin=0)
        fig.colorbar(im, ax=ax, label="attention weight")
        ax.set_title(f"attention weights, head {h}, batch {a.batch} "
                     f"({nq} queries x {nk} keys)\n{os.path.basename(a.npy)}", fontsize=10)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        if tokens:
            ax.set_xticks(range(nk))
            ax.set_xticklabels(tokens, rotation=90, fontsize=7)
            ax.set_yticks(range(nq))
            ax.set_yticklabels(tokens[offset:] if offset >= 0 else [str(i) for i in range(nq)],
                               fontsize=7)
        fig.tight_layout()
        path = os.path.join(out, f"heatmap_h{h}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"  wrote {path}")


if __name__ == "__main__":
    main()
