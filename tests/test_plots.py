"""TAP: scripts/plot.py on a small real sweep writes every chart as PNG and
SVG (and plot_models.py, plot_gpu.py and plot_serving.py theirs); an empty
CSV or one without attnbench's columns is a one-line error, not a
traceback.

    python3 test_plots.py ATTNBENCH PLOT_PY WORKDIR
    python3 test_plots.py --skip REASON
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import done, ok, skip_all_if_asked  # noqa: E402
from test_arch_charts import check_png  # noqa: E402

def main():
    skip_all_if_asked()
    bench, plot, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    csv_path = os.path.join(work, "sweep.csv")
    r = subprocess.run([bench, "--backend=naive,tiled,local,performer", "--seq", "32:128:x2",
                        "--heads", "1,2", "--dk", "8,16", "--reps", "2",
                        "--min-time", "0.005", "--csv", csv_path], capture_output=True, text=True)
    ok(r.returncode == 0, f"a small sweep (4 backends, heads, d_k): exit {r.returncode}")
    for m in ("16", "64"):
        subprocess.run([bench, "--backend=performer", "--features", m, "--seq", "128", "--dk", "8",
                        "--reps", "2", "--min-time", "0.005", "--csv", csv_path, "--resume"],
                       capture_output=True)
    out = os.path.join(work, "charts")
    r = subprocess.run([sys.executable, plot, csv_path, "--out", out, "--baseline", "naive",
                        "--machine", "test"], capture_output=True, text=True)
    ok(r.returncode == 0, f"plot.py: exit {r.returncode} {r.stderr.strip()[-300:]}")
    for name in ("time", "memory", "gflops", "bandwidth", "speedup", "heads", "dk", "tradeoff"):
        png, svg = os.path.join(out, name + ".png"), os.path.join(out, name + ".svg")
        why = check_png(png)
        svg_ok = os.path.exists(svg) and os.path.getsize(svg) > 5000 and b"</svg>" in open(svg, "rb").read()[-100:]
        ok(why is None and svg_ok, f"{name}.png and {name}.svg: {why or 'valid'}, svg whole: {svg_ok}")
    with open(os.path.join(work, "time_legend.txt"), "w") as f:
        f.write(r.stdout)
    # A decode sweep (Nq = 1 against a growing cache, grouped heads): its
    # charts are drawn against Nk, one panel per K/V head count.
    dec = os.path.join(work, "decode.csv")
    r = subprocess.run([bench, "--backend=naive,tiled", "--seq", "1", "--seq-kv", "64:512:x2",
                        "--heads", "4", "--kv-heads", "1,4", "--dk", "16", "--reps", "2",
                        "--min-time", "0.005", "--csv", dec], capture_output=True, text=True)
    ok(r.returncode == 0, f"a small decode sweep (Nq 1, Hkv 1 and 4): exit {r.returncode}")
    dout = os.path.join(work, "decode-charts")
    r = subprocess.run([sys.executable, plot, dec, "--out", dout, "--charts", "time,bandwidth"],
                       capture_output=True, text=True)
    ok(r.returncode == 0, f"plot.py on the decode sweep: exit {r.returncode} {r.stderr.strip()[-300:]}")
    for name in ("time", "bandwidth"):
        svg = os.path.join(dout, name + ".svg")
        body = open(svg).read() if os.path.exists(svg) else ""
        why = check_png(os.path.join(dout, name + ".png"))
        ok(why is None and "key length Nk" in body and "Hkv=1" in body,
           f"decode {name}: drawn against Nk with a panel for Hkv=1 ({why or 'valid png'})")
    # The roofline, on a planted machine (100 GFLOP/s, 50 GB/s) written into
    # the decode CSV's columns: the ceilings are the planted ones, every case
    # a point, and the figure keeps its title beside the legend.
    import csv
    with open(dec, newline="") as f:
        rows = list(csv.DictReader(f))
    roof = os.path.join(work, "roof.csv")
    with open(roof, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for x in rows:
            w.writerow({**x, "peak_gflops": "100", "roofline_gbs": "50"})
    rout = os.path.join(work, "roof-charts")
    r = subprocess.run([sys.executable, plot, roof, "--out", rout, "--charts", "roofline,bandwidth"],
                       capture_output=True, text=True)
    svg = os.path.join(rout, "roofline.svg")
    body = open(svg).read() if os.path.exists(svg) else ""
    why = check_png(os.path.join(rout, "roofline.png"))
    ok(r.returncode == 0 and why is None and "fp32 ceiling: 100 GFLOP/s, 50.0 GB/s" in body
       and "arithmetic intensity" in body and "Roofline:" in body,
       f"roofline: the planted ceilings (100 GFLOP/s, 50 GB/s), titled ({why or 'valid png'}, "
       f"exit {r.returncode} {r.stderr.strip()[-200:]})")
    # The title's first line is drawn at a y inside the picture (a crop that
    # keeps only the axes and the legend leaves it above the top: y < 0).
    bw = os.path.join(rout, "bandwidth.svg")
    m = re.search(r"<!-- Bandwidth against N[^>]*-->\s*<g transform=\"translate\([-0-9.]+ "
                  r"([-0-9.]+)\)", open(bw).read() if os.path.exists(bw) else "")
    ok(m is not None and float(m.group(1)) > 0,
       f"a chart with its legend outside keeps its title in the picture "
       f"(title at y = {m.group(1) if m else 'not found'})")
    # Bad input: one line on stderr, exit 1.
    empty = os.path.join(work, "empty.csv")
    open(empty, "w").close()
    other = os.path.join(work, "other.csv")
    with open(other, "w") as f:
        f.write("a,b\n1,2\n")
    header_only = os.path.join(work, "header.csv")
    with open(csv_path) as f:
        head = f.readline()
    with open(header_only, "w") as f:
        f.write(head)
    for path, text in ((empty, "empty (no header)"), (other, "not an attnbench sweep CSV"),
                       (header_only, "no PASSED, timed rows"),
                       (os.path.join(work, "nope.csv"), "no such file")):
        r = subprocess.run([sys.executable, plot, path, "--out", os.path.join(work, "x")],
                           capture_output=True, text=True)
        ok(r.returncode == 1 and text in r.stderr and "Traceback" not in r.stderr and
           len(r.stderr.strip().splitlines()) == 1, f"{os.path.basename(path)}: {r.stderr.strip()}")
    r = subprocess.run([sys.executable, plot, csv_path, "--out", out, "--baseline", "blas"],
                       capture_output=True, text=True)
    ok(r.returncode == 1 and "--baseline blas: not in the CSV" in r.stderr,
       f"an absent baseline: {r.stderr.strip()}")
    models(bench, plot, work, header_only)
    gpu(bench, plot, work, header_only)
    serving(bench, plot, work, header_only)
    done()


def serving(bench, plot, work, header_only):
    """results/serving's charts (plot_serving.py) on a small paged run: a
    panel per batch size, the contiguous cache's line; throughput against
    the batch size, a line per layout; a folder whose CSV has no row is one
    line."""
    scripts = os.path.dirname(plot)
    sdir = os.path.join(work, "serving")
    os.makedirs(sdir)
    r = subprocess.run([bench, "--backend=tiled", "--batch", "1,2", "--seq", "1", "--seq-kv",
                        "256", "--page", "0,16,64", "--heads", "4", "--kv-heads", "2", "--dk",
                        "32", "--reps", "2", "--min-time", "0.005", "--csv",
                        os.path.join(sdir, "paged-1.csv")], capture_output=True)
    ok(r.returncode == 0, f"a paged run, B = 1 and 2, pages of 16 and 64: exit {r.returncode}")
    r = subprocess.run([bench, "--backend=tiled", "--batch", "1,2,4", "--seq", "1", "--seq-kv",
                        "128", "--page", "0,16", "--heads", "4", "--kv-heads", "2", "--dk",
                        "32", "--reps", "2", "--min-time", "0.005", "--csv",
                        os.path.join(sdir, "batch-1.csv")], capture_output=True)
    ok(r.returncode == 0, f"a decode batch sweep, B = 1, 2, 4, contiguous and pages of 16: "
       f"exit {r.returncode}")
    r = subprocess.run([sys.executable, os.path.join(scripts, "plot_serving.py"), sdir,
                        "--machine", "test"], capture_output=True, text=True)
    svg = os.path.join(sdir, "pages.svg")
    body = open(svg).read() if os.path.exists(svg) else ""
    why = check_png(os.path.join(sdir, "pages.png"))
    ok(r.returncode == 0 and why is None and "B = 2" in body and "contiguous, median" in body,
       f"plot_serving.py: pages.png and pages.svg, a panel per B, the contiguous line "
       f"({why or 'valid png'}; exit {r.returncode} {r.stderr.strip()[-200:]})")
    svg = os.path.join(sdir, "batch.svg")
    body = open(svg).read() if os.path.exists(svg) else ""
    why = check_png(os.path.join(sdir, "batch.png"))
    ok(r.returncode == 0 and why is None and "pages of 16, median" in body and
       "contiguous, median" in body and "batch size B" in body,
       f"plot_serving.py: batch.png and batch.svg, throughput against B, a line per layout "
       f"({why or 'valid png'})")
    edir = os.path.join(work, "serving-empty")
    os.makedirs(edir)
    shutil.copy(header_only, os.path.join(edir, "paged-1.csv"))
    r = subprocess.run([sys.executable, os.path.join(scripts, "plot_serving.py"), edir],
                       capture_output=True, text=True)
    ok(r.returncode == 1 and "Traceback" not in r.stderr and
       len(r.stderr.strip().splitlines()) == 1,
       f"plot_serving.py on a CSV without rows: one line ({r.stderr.strip()})")


def gpu(bench, plot, work, header_only):
    """results/gpu's tables and chart (gpu_tables.py, plot_gpu.py) on a small
    run whose rows are renamed to the GPU backends and the CUDA peer (the
    scripts read only the CSV; no GPU is needed to test them)."""
    scripts = os.path.dirname(plot)
    gdir = os.path.join(work, "gpu")
    os.makedirs(gdir)
    raw, path = os.path.join(gdir, "raw.csv"), os.path.join(gdir, "gpu.csv")
    common = ["--reps", "2", "--min-time", "0.005", "--dk", "8", "--heads", "2",
              "--dtype", "fp32,fp16", "--csv", raw, "--resume"]
    r1 = subprocess.run([bench, "--backend=naive,tiled", "--seq", "64:128:x2", "--causal=both"] +
                        common, capture_output=True)
    r2 = subprocess.run([bench, "--backend=naive,tiled", "--batch", "1,2", "--seq", "1",
                         "--kv-heads", "2,1", "--seq-kv", "256,512"] + common, capture_output=True)
    r3 = subprocess.run([bench, "--backend=naive,tiled", "--batch", "1", "--seq", "1",
                         "--kv-heads", "1", "--seq-kv", "256", "--reps", "2", "--min-time",
                         "0.005", "--dk", "8", "--heads", "2", "--dtype", "bf16", "--csv", raw,
                         "--resume"], capture_output=True)
    with open(raw) as f, open(path, "w") as g:
        g.write(f.read().replace(",naive,", ",vulkan,").replace(",tiled,", ",torch-sdpa-cuda,"))
    ok(r1.returncode == 0 and r2.returncode == 0 and r3.returncode == 0,
       f"prefill and decode rows, fp32 and fp16, and decoding in bf16: exit {r1.returncode}, "
       f"{r2.returncode}, {r3.returncode}")
    r = subprocess.run([sys.executable, os.path.join(scripts, "gpu_tables.py"), path],
                       capture_output=True, text=True)
    pre = [ln for ln in r.stdout.splitlines()
           if re.match(r"\| fp(32|16) \| 1 \| 2 \| 8 \| [01] \|", ln)]
    dec = [ln for ln in r.stdout.splitlines() if re.match(r"\| (fp32|fp16|bf16) \| [12] \| 2 \| "
                                                          r"[12] \| 8 \| (256|512) \|", ln)]
    ok(r.returncode == 0 and len(pre) == 8 and len(dec) == 17 and
       all(re.search(r"\| [0-9.]+x \| - \|$", ln) for ln in pre + dec) and
       "- vulkan: 25 PASSED" in r.stdout,
       f"gpu_tables.py: 8 prefill and 17 decoding rows (Hkv = 2 and 1, bf16), vulkan over torch "
       f"as a ratio, the verdicts "
       f"({len(pre)}, {len(dec)}; exit {r.returncode} {r.stderr.strip()[-200:]})")
    # One torch row taken out (a run cut short): the tables name the case.
    cut = os.path.join(gdir, "cut.csv")
    with open(path) as f, open(cut, "w") as g:
        lines = f.readlines()
        gone = [i for i, ln in enumerate(lines) if ",torch-sdpa-cuda," in ln and
                "/b:2/" in ln and "/hkv:1/" in ln and "/skv:512/" in ln][:1]
        g.writelines(ln for i, ln in enumerate(lines) if i not in gone)
    c = subprocess.run([sys.executable, os.path.join(scripts, "gpu_tables.py"), cut],
                       capture_output=True, text=True)
    ok("Cases without a row of each backend of the run: 0." in r.stdout and len(gone) == 1 and
       re.search(r"run: 1:\n- torch-sdpa-cuda: fp(32|16) B=2 H=2 Hkv=1 N=1 Nk=512 d=8 causal=0\n",
                 c.stdout) is not None,
       f"gpu_tables.py: no case missing in the full CSV; a torch row taken out is named "
       f"({len(gone)} taken out; {[ln for ln in c.stdout.splitlines() if 'Hkv=1 N=1' in ln]})")
    r = subprocess.run([sys.executable, os.path.join(scripts, "plot_gpu.py"), path, "--out", gdir,
                        "--machine", "test"], capture_output=True, text=True)
    body = open(os.path.join(gdir, "gpu.svg")).read() \
        if os.path.exists(os.path.join(gdir, "gpu.svg")) else ""
    why = check_png(os.path.join(gdir, "gpu.png"))
    ok(r.returncode == 0 and why is None and "torch-sdpa-cuda fp16, decode B=2" in body and
       "vulkan fp32, decode B=1" in body and "vulkan bf16, decode B=1" in body and
       "vulkan fp32" in body and "Hkv=1" in body and
       "Hkv=2" in body, f"plot_gpu.py: gpu.png and gpu.svg with every series, a decoding panel "
       f"per Hkv "
       f"({why or 'valid png'}; exit {r.returncode} {r.stderr.strip()[-200:]})")
    # scripts/results-gpu on a machine without a Vulkan GPU stops before
    # measuring anything, saying why (with one, it would run for minutes).
    listing = subprocess.run([bench, "--list"], capture_output=True, text=True).stdout
    if re.search(r"^[0-9]+: .*\[(discrete|integrated) GPU", listing, re.M):
        ok(True, "scripts/results-gpu without a GPU # SKIP this machine has a Vulkan GPU")
    else:
        env = dict(os.environ, ATTNBENCH=bench, OUT=os.path.join(gdir, "run"),
                   PYTHON=sys.executable)
        r = subprocess.run([os.path.join(scripts, "results-gpu")], capture_output=True,
                           text=True, env=env)
        ok(r.returncode == 1 and "no Vulkan GPU in --list" in r.stderr and
           not os.path.exists(os.path.join(gdir, "run", "gpu.csv")),
           f"scripts/results-gpu without a GPU: refused before any case ({r.stderr.strip()})")
    for script in ("gpu_tables.py", "plot_gpu.py"):
        r = subprocess.run([sys.executable, os.path.join(scripts, script), header_only, "--out",
                            gdir][:3 if script == "gpu_tables.py" else 5],
                           capture_output=True, text=True)
        ok(r.returncode == 1 and "Traceback" not in r.stderr,
           f"{script} on a CSV without rows: one line ({r.stderr.strip()})")


def models(bench, plot, work, header_only):
    """results/models' charts and tables (plot_models.py, models_tables.py)
    on small runs of two presets, one of them windowed with sinks."""
    scripts = os.path.dirname(plot)
    mdir = os.path.join(work, "models")
    os.makedirs(mdir)
    common = ["--model", "llama-3.2-1b,gpt-oss-20b-local", "--heads", "8", "--dtype", "bf16",
              "--reps", "2", "--min-time", "0.005"]
    r1 = subprocess.run([bench, "--backend=naive,tiled,blas", "--seq", "64:128:x2", "--csv",
                         os.path.join(mdir, "prefill.csv")] + common, capture_output=True)
    r2 = subprocess.run([bench, "--backend=naive,tiled", "--seq", "1", "--seq-kv", "256:1024:x2",
                         "--csv", os.path.join(mdir, "decode.csv")] + common, capture_output=True)
    ok(r1.returncode == 0 and r2.returncode == 0,
       f"two presets, prefill and decode: exit {r1.returncode}, {r2.returncode}")
    r = subprocess.run([sys.executable, os.path.join(scripts, "plot_models.py"), mdir,
                        "--machine", "test"], capture_output=True, text=True)
    ok(r.returncode == 0, f"plot_models.py: exit {r.returncode} {r.stderr.strip()[-300:]}")
    for name in ("prefill", "decode"):
        svg = os.path.join(mdir, name + ".svg")
        body = open(svg).read() if os.path.exists(svg) else ""
        why = check_png(os.path.join(mdir, name + ".png"))
        ok(why is None and "llama-3.2-1b" in body and "gpt-oss-20b-local" in body,
           f"models {name}: a line per preset ({why or 'valid png'})")
    r = subprocess.run([sys.executable, os.path.join(scripts, "models_tables.py"), mdir],
                       capture_output=True, text=True)
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| gpt-oss-20b-local |")]
    ok(r.returncode == 0 and len(rows) >= 3 and "window 128,0, sinks" in r.stdout and
       "blas computes from fp32 storage only" in r.stdout,
       f"models_tables.py: the preset in the presets, prefill and decode tables, the SKIPPED "
       f"reasons (exit {r.returncode} {r.stderr.strip()[-200:]})")
    shutil.copy(header_only, os.path.join(mdir, "prefill.csv"))
    r = subprocess.run([sys.executable, os.path.join(scripts, "plot_models.py"), mdir],
                       capture_output=True, text=True)
    ok(r.returncode == 1 and "no PASSED, timed rows of a --model preset" in r.stderr and
       "Traceback" not in r.stderr, f"plot_models.py on a CSV without rows: {r.stderr.strip()}")


if __name__ == "__main__":
    main()
