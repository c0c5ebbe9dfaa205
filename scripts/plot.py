#!/usr/bin/env python3
"""Charts of an attnbench sweep CSV (--csv, schema 3, 4 or 5), as PNG and SVG.

    python3 scripts/plot.py SWEEP.csv --out DIR [--baseline blas] [--machine TEXT]

Writes into DIR, one panel per (model, batch, heads, K/V heads, d_k, d_v, causal) slice
of the CSV. N is the query length, or the key length Nk for a decode sweep (a
CSV whose query lengths are fewer than its key lengths: Nq = 1 against a
growing cache), with one slice per Nq then:
  time.*      median time against N, log-log, one line per backend, the
              exponent of N fitted over its points in the legend (with 3 points
              or more, and the range it was fitted on);
  memory.*    peak workspace (solid) and peak RSS growth (dotted) against N,
              log-log, with dashed O(N^2) and O(N) guides through the first point;
  gflops.*    GFLOP/s against N, the measured fp32 peak as a horizontal line;
  bandwidth.* GB/s against N (the least bytes a case must move: Q, O and the
              K/V rows it sees, over its time), the measured triad bandwidth
              as a line and its % on the right axis: the figure that matters
              when decoding, which is memory-bound (schema 4 and 5 CSVs);
  speedup.*   time of --baseline over each backend's, against N;
  heads.*, dk.*   time against the number of heads / d_k at the largest N,
              when the CSV varies them;
  tradeoff.*  approximate variants: error against softmax attention (nmse)
              against time, one point per setting, each labelled with its N.
A CSV with the backward (--pass, schema 9) draws each backend's backward and
forward + backward as series of their own beside its forward (the same
colour, dashed and dotted), and their speedups over the baseline's same pass.
Only PASSED, timed rows are drawn. Each backend has one colour and marker in
every chart of the project (scripts/chartstyle.py); exact backends are solid,
variants dashed, peers dotted; the legend sits right of the panels.
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import math
import os
import sys
import textwrap

import chartstyle
import csvload

NEED = ["backend", "verdict", "batch", "heads", "seq_q", "seq_kv", "d_k", "d_v", "causal",
        "real_median_s", "gflops", "peak_gflops", "workspace_bytes", "rss_peak_bytes", "kind",
        "approx_nmse", "features", "proj", "window_left", "window_right"]


def die(msg):
    csvload.die("plot.py", msg)


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def load(path):
    rows = csvload.read_csv(path, NEED, "plot.py", "an attnbench sweep CSV (schema 3, 4 or 5)",
                            f"run attnbench --csv {path} first")
    ok = [r for r in rows if r["verdict"] == "PASSED" and num(r["real_median_s"])]
    if not ok:
        die(f"{path}: no PASSED, timed rows to draw ({len(rows)} rows in all)")
    return ok


def slope(xs, ys):
    """The log-log slope fitted over the points: only from 3 points up (two
    points always lie on a line, and say nothing of a trend)."""
    if len(xs) < 3:
        return None
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--baseline", help="backend the speedups are over (default: blas, else naive)")
    ap.add_argument("--machine", default="", help="machine description for the titles")
    ap.add_argument("--charts",
                    default="time,memory,gflops,bandwidth,roofline,speedup,heads,dk,tradeoff",
                    help="which charts (default: all of them)")
    a = ap.parse_args()
    want = set(a.charts.split(","))
    unknown = want - {"time", "memory", "gflops", "bandwidth", "roofline", "speedup", "heads",
                      "dk", "tradeoff"}
    if unknown:
        die(f"--charts: unknown chart {', '.join(sorted(unknown))}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is missing (Debian: apt-get install python3-matplotlib)")
    chartstyle.outdir(a.out, "plot.py")
    rows = load(a.csv)
    backends = sorted({r["backend"] for r in rows})
    baseline = a.baseline or ("blas" if "blas" in backends else "naive")
    if a.baseline and a.baseline not in backends:
        die(f"--baseline {a.baseline}: not in the CSV (backends: {', '.join(backends)})")

    # A decode sweep runs few query lengths against many key lengths: its
    # x axis is Nk, and each query length is a slice of its own.
    decode = len({r["seq_q"] for r in rows}) < len({r["seq_kv"] for r in rows})
    xcol = "seq_kv" if decode else "seq_q"
    xlabel = "key length Nk (the KV cache)" if decode else "sequence length N"

    def X(r):
        return int(r[xcol])

    def hkv(r):
        return int(r.get("kv_heads") or r["heads"])   # schema 3 has no kv_heads: Hkv = H

    def skey(r):
        # A --model preset (schema 8) is a slice of its own, named first.
        return (r.get("model") or "", int(r["batch"]), int(r["heads"]), hkv(r), int(r["d_k"]),
                int(r["d_v"]), r["causal"] == "1", int(r["seq_q"]) if decode else 0)

    def sname(k):
        m, b, h, g, dk, dv, c, nq = k
        return (f"{m}: " if m else "") + f"B={b} H={h}" + (f" Hkv={g}" if g != h else "") + \
            (f" Nq={nq}" if decode else "") + f" d_k={dk}" + (f" d_v={dv}" if dv != dk else "") + \
            (" causal" if c else "")

    exact = [r for r in rows if r["kind"] in ("softmax", "local", "sparse", "linear",
                                              "performer", "linformer")]
    slices = sorted({skey(r) for r in exact})
    if len(slices) > 8:
        print(f"plot.py: {len(slices)} slices; drawing the first 8", file=sys.stderr)
        slices = slices[:8]
    # One line per backend and variant setting (the knobs make different functions).
    def series(r):
        k = r["kind"]
        tag = {"local": f" w={r['window_left']},{r['window_right']}", "performer": f" m={r['features']}",
               "linformer": f" p={r['proj']}"}.get(k, "")
        # Storage types other than fp32 (schema 5) are series of their own.
        dt, kvdt = r.get("dtype") or "fp32", r.get("kv_dtype") or "fp32"
        if (dt, kvdt) != ("fp32", "fp32"):
            tag += f" {dt}" + (f" kv:{kvdt}" if kvdt != dt else "")
        # The backward and forward + backward (schema 9) beside the forward.
        if (r.get("pass") or "fwd") != "fwd":
            tag += f" {r['pass']}"
        return r["backend"] + tag

    def figure(n, legend_rows=0):
        """legend_rows: room under each panel for a legend of its own."""
        cols = min(n, 2)
        rws = (n + cols - 1) // cols
        fig, axes = plt.subplots(rws, cols, figsize=(6.4 * cols, (4.6 + 0.16 * legend_rows) * rws),
                                 squeeze=False)
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        return fig, list(axes.flat[:n])

    def save(fig, name, title, note=None, per_panel=False):
        """per_panel: each panel's legend under it (its labels differ from
        panel to panel); otherwise one legend right of them all."""
        if name not in want:
            plt.close(fig)
            return
        sub = f"\n{a.machine}" if a.machine else ""
        head = fig.suptitle(textwrap.fill(title, 100) + sub, fontsize=11)
        if per_panel:
            for ax in fig.axes:
                if ax.get_visible() and ax.get_legend_handles_labels()[0]:
                    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2,
                              fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.97 if fig.get_figheight() > 6 else 0.93))
        leg = None if per_panel else chartstyle.legend_outside(fig, fig.axes, note)
        for ext in ("png", "svg"):
            path = os.path.join(a.out, f"{name}.{ext}")
            fig.savefig(path, dpi=110, bbox_inches="tight",
                        bbox_extra_artists=[head, leg] if leg else None)
            print(f"wrote {path}")
        plt.close(fig)

    def by_series(rs):
        out = {}
        for r in rs:
            out.setdefault(series(r), []).append(r)
        for s in out.values():
            s.sort(key=X)
        return out

    # time
    nseries = len({series(r) for r in exact})
    fig, axes = figure(len(slices), legend_rows=(nseries + 1) // 2)
    for ax, k in zip(axes, slices):
        for name, rs in sorted(by_series([r for r in exact if skey(r) == k]).items()):
            n = [X(r) for r in rs]
            t = [float(r["real_median_s"]) for r in rs]
            e = slope(n, t)
            ax.plot(n, [x * 1e3 for x in t], **chartstyle.storage_kw(name, chartstyle.kw(rs[0]["backend"])),
                    label=f"{name}" + (f" (N^{e:.2f}, N {min(n)}..{max(n)})" if e is not None
                                       else ""))
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="median time (ms)",
               title=sname(k))
        ax.grid(True, which="both", alpha=0.3)
    save(fig, "time", "Time per run against N (log-log; the exponent of N, fitted on 3 points "
         "or more, in the legend)", per_panel=True)

    # memory
    fig, axes = figure(len(slices))
    for ax, k in zip(axes, slices):
        first = None
        for name, rs in sorted(by_series([r for r in exact if skey(r) == k]).items()):
            n = [X(r) for r in rs]
            be = rs[0]["backend"]
            ws = [(x, max(num(r["workspace_bytes"]), 1) / 2**20) for x, r in zip(n, rs)
                  if num(r["workspace_bytes"]) is not None]
            if ws:   # a peer may not know its workspace (torch's allocator)
                ax.plot(*zip(*ws), **chartstyle.storage_kw(name, chartstyle.kw(be)), label=name)
            rss = [(X(r), num(r["rss_peak_bytes"])) for r in rs]
            rss = [(x, y / 2**20) for x, y in rss if y]
            if rss:   # thin, markerless, in the backend's colour
                ax.plot(*zip(*rss), color=chartstyle.color(be), linestyle=(0, (1, 2)),
                        linewidth=0.9, alpha=0.8)
            if ws and (first is None or (ws[0][1] > first[1] and ws[0][0] <= first[0])):
                first = (ws[0][0], ws[0][1], max(n))
        if first:
            n0, y0, n1 = first
            xs = [n0, n1]
            ax.plot(xs, [y0, y0 * (n1 / n0) ** 2], color="#bbbbbb", linewidth=2.5, zorder=0,
                    label="O(N²) guide")
            ax.plot(xs, [y0, y0 * (n1 / n0)], color="#dddddd", linewidth=2.5, zorder=0,
                    label="O(N) guide")
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="MiB",
               title=sname(k))
        ax.grid(True, which="both", alpha=0.3)
    from matplotlib.lines import Line2D
    save(fig, "memory", "Peak memory against N: each backend's workspace (tracked allocator, "
         "with markers) and the process's RSS growth (thin dotted, same colour)",
         note=[(Line2D([], [], color="#555555", marker="o"), "workspace"),
               (Line2D([], [], color="#555555", linestyle=(0, (1, 2)), linewidth=0.9),
                "RSS growth")])

    # GFLOP/s
    fig, axes = figure(len(slices))
    peak = max((num(r["peak_gflops"]) or 0 for r in rows), default=0)
    for ax, k in zip(axes, slices):
        for name, rs in sorted(by_series([r for r in exact if skey(r) == k]).items()):
            pts = [(X(r), num(r["gflops"])) for r in rs if num(r["gflops"])]
            if pts:
                ax.plot(*zip(*pts), **chartstyle.storage_kw(name, chartstyle.kw(rs[0]["backend"])), label=name)
        if peak:
            ax.axhline(peak, color="#999999", linestyle="-", linewidth=2, zorder=0,
                       label=f"fp32 FMA peak {peak:.0f} GFLOP/s")
        ax.set(xscale="log", xlabel=xlabel, ylabel="GFLOP/s (each kind's own work)",
               title=sname(k))
        ax.grid(True, which="both", alpha=0.3)
    save(fig, "gflops", "Rate against N (GFLOP/s of the work each backend's algorithm does)")

    # GB/s: the bandwidth view (schema 4 and 5)
    if "bandwidth" in want and all(num(r.get("gbs")) is not None for r in rows):
        fig, axes = figure(len(slices))
        bw = max((num(r.get("peak_gbs")) or 0 for r in rows), default=0)
        for ax, k in zip(axes, slices):
            for name, rs in sorted(by_series([r for r in exact if skey(r) == k]).items()):
                pts = [(X(r), num(r["gbs"])) for r in rs if num(r["gbs"])]
                if pts:
                    ax.plot(*zip(*pts), **chartstyle.storage_kw(name, chartstyle.kw(rs[0]["backend"])), label=name)
            if bw:
                ax.axhline(bw, color="#999999", linestyle="-", linewidth=2, zorder=0,
                           label=f"triad bandwidth {bw:.1f} GB/s")
                ax.secondary_yaxis("right", functions=(lambda y: 100 * y / bw,
                                                       lambda p: p * bw / 100)) \
                    .set_ylabel("% of triad bandwidth")
            ax.set(xscale="log", xlabel=xlabel, ylabel="GB/s (least bytes moved / time)",
                   title=sname(k))
            ax.set_ylim(bottom=0)
            ax.grid(True, which="both", alpha=0.3)
        save(fig, "bandwidth", "Bandwidth against N: Q, O and the visible K/V rows at their "
             "storage widths, over the median time")

    # the roofline (schema 7): every case on one scale, achieved GFLOP/s
    # against FLOPs per byte, under the measured ceilings
    roof = [r for r in exact if num(r.get("roofline_gbs")) and num(r.get("gflops"))
            and num(r.get("bytes"))]
    if "roofline" in want and roof:
        fig, ax = plt.subplots(figsize=(7.2, 5.0))
        bw = max(num(r["roofline_gbs"]) for r in roof)
        ai = [float(r["flops"]) / float(r["bytes"]) for r in roof]
        lo, hi = min(ai) / 2, max(ai) * 2
        peaks = {}
        for r in roof:   # each peak, named by the storage types held to it; with
            # --fma-probe each case has its own: the fastest bounds them all
            dt = "bf16" if r.get("dtype") == "bf16" and r.get("kv_dtype") == "bf16" else "fp32"
            peaks[dt] = max(peaks.get(dt, 0), num(r["peak_gflops"]) or 0)
        # A CPU without bf16 dot products holds bf16 to the FMA peak too: one
        # ceiling for peaks within 10% of each other (a dot-product peak is 2x).
        merged = []
        for pk, dt in sorted((pk, dt) for dt, pk in peaks.items()):
            if merged and pk <= merged[-1][0] * 1.1:
                merged[-1] = (pk, merged[-1][1] + " and " + dt)
            else:
                merged.append((pk, dt))
        for pk, dt in merged:
            knee = pk / bw
            xs = [x for x in (lo, knee, hi) if lo <= x <= hi] or [lo, hi]
            ax.plot(xs, [min(pk, x * bw) for x in xs], color="#999999", linewidth=2, zorder=0,
                    linestyle="--" if dt == "bf16" else "-",
                    label=f"{dt} ceiling: {pk:.0f} GFLOP/s, {bw:.1f} GB/s")
        for name, rs in sorted(by_series(roof).items()):
            st = chartstyle.storage_kw(name, chartstyle.kw(rs[0]["backend"]))
            c = st["color"]
            ax.scatter([float(r["flops"]) / float(r["bytes"]) for r in rs],
                       [num(r["gflops"]) for r in rs], marker=st["marker"], s=30, label=name,
                       facecolors=st.get("markerfacecolor", c), edgecolors=c)
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs per least byte)",
               ylabel="GFLOP/s achieved")
        ax.grid(True, which="both", alpha=0.3)
        probed = any(num(r.get("probe_gbs")) for r in roof)
        fprobed = any(num(r.get("probe_gflops")) for r in roof)
        save(fig, "roofline", "Roofline: each case's GFLOP/s against its FLOPs per byte, under "
             "the machine's measured ceilings (min(peak, intensity x bandwidth); peak: " +
             ("the fastest FMA probe beside a case, --fma-probe" if fprobed else "--peak's") +
             "; bandwidth: " +
             ("the fastest read-only stream probed beside a case, --bw-probe)" if probed else
              "the faster of triad and read-only)"))

    # speedup
    fig, axes = figure(len(slices))
    for ax, k in zip(axes, slices):
        # Each pass (forward, backward, both) over the baseline's same pass.
        def pass_of(r):
            return r.get("pass") or "fwd"

        base = {(pass_of(r), X(r)): float(r["real_median_s"]) for r in exact
                if skey(r) == k and series(r) == baseline + ("" if pass_of(r) == "fwd"
                                                              else " " + pass_of(r))}
        for name, rs in sorted(by_series([r for r in exact if skey(r) == k]).items()):
            pts = [(X(r), base[(pass_of(r), X(r))] / float(r["real_median_s"])) for r in rs
                   if (pass_of(r), X(r)) in base]
            if pts:
                ax.plot(*zip(*pts), **chartstyle.storage_kw(name, chartstyle.kw(rs[0]["backend"])), label=name)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set(xscale="log", yscale="log", xlabel=xlabel,
               ylabel=f"speedup over {baseline}", title=sname(k))
        ax.grid(True, which="both", alpha=0.3)
    save(fig, "speedup", f"Speedup over {baseline} (its median time over each backend's, "
         "same run)")

    # heads and d_k sweeps
    for dim, label, fname in (("heads", "heads", "heads"), ("d_k", "d_k", "dk")):
        values = sorted({int(r[dim]) for r in exact})
        if len(values) < 2:
            continue
        nmax = max(X(r) for r in exact
                   if all(any(int(x[dim]) == v and X(x) == X(r) for x in exact) for v in values))
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
        for name, rs in sorted(by_series([r for r in exact if X(r) == nmax]).items()):
            pts = sorted({int(r[dim]): float(r["real_median_s"]) * 1e3 for r in rs}.items())
            if len(pts) > 1:
                ax.plot(*zip(*pts), **chartstyle.storage_kw(name, chartstyle.kw(rs[0]["backend"])), label=name)
        ax.set(xscale="log", yscale="log", xlabel=label, ylabel="median time (ms)")
        ax.grid(True, which="both", alpha=0.3)
        save(fig, fname, f"Time against {label} at N = {nmax}")

    # accuracy against speed for the approximate variants
    approx = [r for r in rows if num(r["approx_nmse"]) is not None and
              r["kind"] in ("local", "sparse", "linear", "performer", "linformer")]
    if approx:
        fig, ax = plt.subplots(figsize=(6.8, 4.8))
        for name, rs in sorted(by_series(approx).items()):
            be = rs[0]["backend"]
            xs = [float(r["real_median_s"]) * 1e3 for r in rs]
            ys = [max(float(r["approx_nmse"]), 1e-12) for r in rs]
            ax.scatter(xs, ys, color=chartstyle.color(be), marker=chartstyle.marker(be), label=name)
            for x, y, r in zip(xs, ys, rs):
                ax.annotate(f"{X(r)}", (x, y), textcoords="offset points", xytext=(4, 3),
                            fontsize=6, color=chartstyle.color(be))
        ax.set(xscale="log", yscale="log", xlabel="median time (ms)",
               ylabel="nmse against softmax attention")
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "tradeoff", f"Approximation error against time (one point per case and "
             f"setting, labelled with its {'Nk' if decode else 'N'})")


if __name__ == "__main__":
    main()
