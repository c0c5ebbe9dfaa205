#!/usr/bin/env python3
"""Tables of results/variants/ from the CSVs attnbench wrote there.

    python3 scripts/variants_tables.py results/variants --exact blas

Reads lra-raw.csv, scaling-raw.csv, approx-raw.csv (attnbench --csv, schema 3, 4 or 5)
and lra_paper.csv (Tay et al. 2020, Table 2); writes lra.csv, lra.md,
scaling.csv, scaling.md, approx.csv, approx.md. Only the standard library.
"""
import argparse
import csv
import math
import os
import sys

import csvload

VARIANTS = ["local", "sparse", "linear", "performer", "linformer"]


def die(msg):
    csvload.die("variants_tables.py", msg)


def read_rows(path):
    need = ["backend", "verdict", "seq_q", "real_median_s", "workspace_bytes", "batch", "heads",
            "scale", "seq_kv", "d_k", "d_v", "approx_nmse", "approx_max_abs", "features", "proj"]
    rows = csvload.read_csv(path, need, "variants_tables.py", "an attnbench CSV (schema 3, 4 or 5)",
                            "run scripts/results-variants")
    if not rows:
        die(f"{path}: no rows")
    bad = [r for r in rows if r["verdict"] != "PASSED"]
    if bad:
        die(f"{path}: {len(bad)} case(s) did not pass, e.g. {bad[0]['backend']} "
            f"N={bad[0]['seq_q']}: {bad[0]['verdict']} {bad[0].get('reason', '')}")
    return rows


def as_int(x):
    """A byte count; older CSVs wrote those over 1e9 as %.9g."""
    try:
        return int(x)
    except ValueError:
        return int(float(x))


def io_bytes(r):
    """Q, K, V and O in fp32: what every backend holds besides its workspace."""
    b, h = int(r["batch"]), int(r["heads"])
    nq, nk, dk, dv = int(r["seq_q"]), int(r["seq_kv"]), int(r["d_k"]), int(r["d_v"])
    return 4 * b * h * (nq * dk + nk * dk + nk * dv + nq * dv)


def index(rows):
    return {(r["backend"], int(r["seq_q"])): r for r in rows}


def slope(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx


def fmt_time(s):
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"


def fmt_bytes(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def lra(d, exact):
    rows = index(read_rows(os.path.join(d, "lra-raw.csv")))
    paper = {}
    with open(os.path.join(d, "lra_paper.csv"), newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            paper[(r["attnbench_backend"], int(r["n"]))] = r
    sizes = sorted({n for (_, n) in rows})
    out = []
    for be in [exact] + VARIANTS:
        pk = "exact" if be == exact else be
        for n in sizes:
            r, e = rows.get((be, n)), rows.get((exact, n))
            if not r or not e:
                die(f"lra-raw.csv: no row for {be if not r else exact} at N={n}")
            pr, pe = paper.get((pk, n)), paper.get(("exact", n))
            t, te = float(r["real_median_s"]), float(e["real_median_s"])
            ws, wse = as_int(r["workspace_bytes"]), as_int(e["workspace_bytes"])
            tot, tote = ws + io_bytes(r), wse + io_bytes(e)
            out.append({
                "backend": be, "n": n, "median_s": t, "speedup": te / t,
                "workspace_bytes": ws, "workspace_ratio": ws / wse,
                "total_bytes": tot, "total_ratio": tot / tote,
                "approx_nmse": r["approx_nmse"],
                "paper_model": pr["model"] if pr else "",
                "paper_steps_per_s": pr["steps_per_s"] if pr else "",
                "paper_speedup": f"{float(pr['steps_per_s']) / float(pe['steps_per_s']):.2f}" if pr else "",
                "paper_mem_gb": pr["peak_mem_gb"] if pr else "",
                "paper_mem_ratio": f"{float(pr['peak_mem_gb']) / float(pe['peak_mem_gb']):.2f}" if pr else "",
            })
    with open(os.path.join(d, "lra.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)

    by = {(o["backend"], o["n"]): o for o in out}
    head = "| backend (paper's model) | " + " | ".join(f"{n // 1024}K ours | {n // 1024}K paper" for n in sizes) + " |"
    sep = "|---|" + "---:|---:|" * len(sizes)
    md = ["### Speed relative to exact attention (higher is faster)", "",
          f"Ours: median time of `{exact}` over the variant's, same run. Paper: steps per second "
          "over the Transformer's.", "", head, sep]
    for be in [exact] + VARIANTS:
        cells = []
        for n in sizes:
            o = by[(be, n)]
            if be == exact:
                cells += [fmt_time(o["median_s"]), f"{o['paper_steps_per_s']} steps/s"]
            else:
                cells += [f"{o['speedup']:.2f}x ({fmt_time(o['median_s'])})", f"{o['paper_speedup']}x"]
        md.append(f"| `{be}` ({by[(be, sizes[0])]['paper_model']}) | " + " | ".join(cells) + " |")
    md += ["", "### Memory relative to exact attention (lower is smaller)", "",
           "Ours: Q, K, V, O plus the backend's peak workspace (what the tracking allocator saw), "
           f"over the same for `{exact}`; the workspace alone in brackets. Paper: peak memory per "
           "device over the Transformer's.", "", head, sep]
    for be in [exact] + VARIANTS:
        cells = []
        for n in sizes:
            o = by[(be, n)]
            if be == exact:
                cells += [f"{fmt_bytes(o['total_bytes'])} ({fmt_bytes(o['workspace_bytes'])})",
                          f"{o['paper_mem_gb']} GB"]
            else:
                cells += [f"{o['total_ratio']:.2f} ({o['workspace_ratio']:.3f})", o["paper_mem_ratio"]]
        md.append(f"| `{be}` ({by[(be, sizes[0])]['paper_model']}) | " + " | ".join(cells) + " |")
    return md


def scaling(d, exact):
    rows = read_rows(os.path.join(d, "scaling-raw.csv"))
    idx = index(rows)
    sizes = sorted({int(r["seq_q"]) for r in rows})
    out = []
    for be in [exact] + VARIANTS:
        rs = [idx.get((be, n)) for n in sizes]
        if not all(rs):
            die(f"scaling-raw.csv: {be} lacks some of N = {sizes}")
        t = [float(r["real_median_s"]) for r in rs]
        ws = [max(as_int(r["workspace_bytes"]), 1) for r in rs]
        tot = [as_int(r["workspace_bytes"]) + io_bytes(r) for r in rs]
        out.append({"backend": be, "n_min": sizes[0], "n_max": sizes[-1],
                    "time_exponent": f"{slope(sizes, t):.3f}",
                    "workspace_exponent": f"{slope(sizes, ws):.3f}",
                    "total_memory_exponent": f"{slope(sizes, tot):.3f}",
                    "median_s_first": t[0], "median_s_last": t[-1],
                    "workspace_first": ws[0], "workspace_last": ws[-1]})
    with open(os.path.join(d, "scaling.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    md = [f"### Exponents: least-squares slope of log(cost) against log(N), N = "
          f"{', '.join(str(n) for n in sizes)}", "",
          "| backend | time | workspace | Q,K,V,O + workspace | time at N="
          f"{sizes[0]} | at N={sizes[-1]} | workspace at N={sizes[0]} | at N={sizes[-1]} |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for o in out:
        md.append(f"| `{o['backend']}` | {o['time_exponent']} | {o['workspace_exponent']} | "
                  f"{o['total_memory_exponent']} | {fmt_time(o['median_s_first'])} | "
                  f"{fmt_time(o['median_s_last'])} | {fmt_bytes(o['workspace_first'])} | "
                  f"{fmt_bytes(o['workspace_last'])} |")
    return md


def approx(d):
    rows = read_rows(os.path.join(d, "approx-raw.csv"))
    out = []
    for be, knob in (("performer", "features"), ("linformer", "proj")):
        rs = sorted((r for r in rows if r["backend"] == be),
                    key=lambda r: (-float(r["scale"]), int(r[knob])))
        if not rs:
            die(f"approx-raw.csv: no {be} rows")
        for r in rs:
            out.append({"backend": be, "knob": knob, "value": int(r[knob]), "n": int(r["seq_q"]),
                        "scale": float(r["scale"]), "median_s": float(r["real_median_s"]),
                        "approx_nmse": float(r["approx_nmse"]),
                        "approx_max_abs": float(r["approx_max_abs"]),
                        "rows_checked": r["rows_checked"], "rows_total": r["rows_total"]})
    with open(os.path.join(d, "approx.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    md = ["### Approximation error against softmax attention, N = "
          f"{out[0]['n']} ({out[0]['rows_checked']} of {out[0]['rows_total']} rows)", "",
          "| backend | scale | knob | value | median time | nmse vs softmax | max abs vs softmax |",
          "|---|---:|---|---:|---:|---:|---:|"]
    for o in out:
        md.append(f"| `{o['backend']}` | {o['scale']:.4g} | `--{o['knob']}` | {o['value']} | "
                  f"{fmt_time(o['median_s'])} | {o['approx_nmse']:.4g} | {o['approx_max_abs']:.4g} |")
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--exact", default="blas", help="the exact-attention backend of the runs")
    a = ap.parse_args()
    for name, md in (("lra.md", lra(a.dir, a.exact)), ("scaling.md", scaling(a.dir, a.exact)),
                     ("approx.md", approx(a.dir))):
        with open(os.path.join(a.dir, name), "w") as f:
            f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
