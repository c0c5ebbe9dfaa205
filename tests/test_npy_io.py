"""TAP: NumPy interop end to end. numpy writes Q, K, V; attnbench reads them
(--inputs), runs, and writes O (--dump-output) and P (--dump-weights); numpy
checks both against its own implementation of the formula. Bad inputs are
refused with a clear message; scripts/heatmap.py draws and analyses P.

    python3 test_npy_io.py ATTNBENCH HEATMAP_PY WORKDIR
    python3 test_npy_io.py --skip REASON
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import done, ok, skip_all_if_asked  # noqa: E402

def reference(np, q, k, v, causal, window=None):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    nq, nk = q.shape[2], k.shape[2]
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[3])
    i = np.arange(nq)[:, None] + nk - nq
    j = np.arange(nk)[None, :]
    mask = np.ones((nq, nk), bool)
    if causal:
        mask &= j <= i
    if window is not None:
        mask &= np.abs(j - i) <= window
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p @ v, p


def main():
    skip_all_if_asked()
    import numpy as np
    bench, heatmap, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng(7)

    def run(*args):
        return subprocess.run([bench, *args], capture_output=True, text=True)

    def inputs(d, B, H, nq, nk, dk, dv, dtype):
        os.makedirs(d, exist_ok=True)
        q = rng.standard_normal((B, H, nq, dk)).astype(dtype)
        k = rng.standard_normal((B, H, nk, dk)).astype(dtype)
        v = rng.standard_normal((B, H, nk, dv)).astype(dtype)
        for name, x in (("q", q), ("k", k), ("v", v)):
            np.save(os.path.join(d, name + ".npy"), x)
        return q, k, v

    cases = [("naive", np.float32, False, (2, 3, 17, 17, 8, 8)),
             ("tiled", np.float64, True, (1, 2, 33, 40, 16, 12)),
             ("blas", np.float32, True, (2, 1, 64, 64, 32, 32))]
    for be, dtype, causal, (B, H, nq, nk, dk, dv) in cases:
        d = os.path.join(work, f"{be}-in")
        q, k, v = inputs(d, B, H, nq, nk, dk, dv, dtype)
        out = os.path.join(work, f"{be}-o.npy")
        args = [f"--backend={be}", "--batch", str(B), "--heads", str(H), "--seq", str(nq),
                "--seq-kv", str(nk), "--dk", str(dk), "--dv", str(dv), "--inputs", d,
                "--dump-output", out, "--reps", "1", "--min-time", "0.001"]
        if causal:
            args.append("--causal")
        r = run(*args)
        if r.returncode == 5 or "SKIPPED" in r.stdout:
            ok(True, f"# SKIP {be} is not usable in this build")
            continue
        want, _ = reference(np, q, k, v, causal)
        got = np.load(out) if os.path.exists(out) else None
        err = float(np.abs(got - want).max()) if got is not None and got.shape == want.shape else None
        ok(r.returncode == 0 and err is not None and err < 1e-5,
           f"{be}, {np.dtype(dtype).name} inputs, causal={causal}, [{B},{H},{nq}/{nk},{dk}/{dv}]: "
           f"O matches numpy (max error {err}) {r.stderr.strip()}")
        ok("fill=npy" in r.stdout and "--inputs " + d in r.stdout,
           f"{be}: the run says where its inputs came from (fill=npy, --inputs in the repro)")

    # 16-bit files: float16 as fp16 storage (tiled), uint16 as bf16 bits (naive).
    for be, kind in (("tiled", "fp16"), ("naive", "bf16")):
        d = os.path.join(work, f"{kind}-in")
        os.makedirs(d, exist_ok=True)
        vals = []
        for name, shape in (("q", (1, 2, 20, 8)), ("k", (1, 2, 24, 8)), ("v", (1, 2, 24, 8))):
            x = rng.standard_normal(shape).astype(np.float32)
            if kind == "fp16":
                x = x.astype(np.float16)
                vals.append(x.astype(np.float64))
            else:
                x = (x.view(np.uint32) >> 16).astype(np.uint16)
                vals.append((x.astype(np.uint32) << 16).view(np.float32).astype(np.float64))
            np.save(os.path.join(d, name + ".npy"), x)
        out = os.path.join(work, f"{kind}-o.npy")
        r = run(f"--backend={be}", "--batch", "1", "--heads", "2", "--seq", "20", "--seq-kv", "24",
                "--dk", "8", "--inputs", d, "--dtype", kind, "--dump-output", out, "--reps", "1",
                "--min-time", "0.001", "--causal")
        want, _ = reference(np, *vals, True)
        got = np.load(out) if os.path.exists(out) else None
        err = float(np.abs(got - want).max()) if got is not None and got.shape == want.shape else None
        ok(r.returncode == 0 and err is not None and err < 1e-5 and "--dtype " + kind in r.stdout,
           f"{be}, {'float16' if kind == 'fp16' else 'uint16 (bf16 bits)'} inputs, --dtype {kind}: "
           f"O matches numpy on the 16-bit values (max error {err}) {r.stderr.strip()}")
    r = run("--backend=naive", "--batch", "1", "--heads", "2", "--seq", "20", "--seq-kv", "24",
            "--dk", "8", "--inputs", os.path.join(work, "bf16-in"), "--reps", "0")
    ok(r.returncode == 2 and "which attnbench reads as bf16 bits, but q is stored as fp32" in r.stderr
       and len(r.stderr.strip().splitlines()) == 1,
       f"uint16 inputs without --dtype bf16 are refused: exit {r.returncode}, {r.stderr.strip()}")

    # A serving batch written by numpy in FlashAttention's varlen layout
    # (packed [T,H,d], int64 cu_seqlens), GQA, causal aligned to each
    # item's own lengths: O against numpy's own loop over the items, with
    # K/V packed and in pages of 16 and of 1.
    lens = [(1, 37), (5, 20), (12, 12), (3, 64)]
    H, Hkv, dk, dv = 4, 2, 16, 8
    d = os.path.join(work, "serving-in")
    os.makedirs(d)
    cq = np.cumsum([0] + [a for a, _ in lens])
    ck = np.cumsum([0] + [b for _, b in lens])
    q = rng.standard_normal((cq[-1], H, dk)).astype(np.float32)
    k = rng.standard_normal((ck[-1], Hkv, dk)).astype(np.float32)
    v = rng.standard_normal((ck[-1], Hkv, dv)).astype(np.float32)
    for name, x in (("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cq), ("cu_seqlens_k", ck)):
        np.save(os.path.join(d, name + ".npy"), x)
    want = np.zeros((cq[-1], H, dv))
    for b in range(len(lens)):
        for h in range(H):
            g = h // (H // Hkv)
            o, _ = reference(np, q[None, None, cq[b]:cq[b + 1], h], k[None, None, ck[b]:ck[b + 1], g],
                             v[None, None, ck[b]:ck[b + 1], g], True)
            want[cq[b]:cq[b + 1], h] = o[0, 0]
    spec = ",".join(f"{a}:{b}" for a, b in lens)
    for be in ("naive", "tiled"):
        for page in ("0", "16", "1"):
            out = os.path.join(work, f"serving-{be}-{page}.npy")
            r = run(f"--backend={be}", "--lens", spec, "--page", page, "--causal", "--inputs", d,
                    "--dump-output", out, "--reps", "1", "--min-time", "0.001")
            got = np.load(out) if os.path.exists(out) else None
            err = float(np.abs(got - want).max()) if got is not None and got.shape == want.shape \
                else None
            ok(r.returncode == 0 and err is not None and err < 1e-5 and "PASSED" in r.stdout,
               f"{be}, serving batch --lens {spec} --page {page} from numpy's packed files (H={H}, "
               f"Hkv={Hkv}, causal per item): O matches numpy (max error {err}) "
               f"{r.stderr.strip()}")

    # Weights: naive causal, local window 2.
    d = os.path.join(work, "w-in")
    q, k, v = inputs(d, 1, 2, 12, 12, 8, 8, np.float32)
    for be, extra, causal, window in (("naive", ["--causal"], True, None),
                                      ("local", ["--window", "2"], False, 2)):
        wpath = os.path.join(work, f"{be}-w.npy")
        r = run(f"--backend={be}", "--batch", "1", "--heads", "2", "--seq", "12", "--dk", "8",
                "--inputs", d, "--dump-weights", wpath, "--reps", "0", *extra)
        _, p = reference(np, q, k, v, causal, window)
        w = np.load(wpath) if os.path.exists(wpath) else None
        err = float(np.abs(w - p).max()) if w is not None and w.shape == p.shape else None
        ok(r.returncode == 0 and err is not None and err < 1e-6,
           f"--dump-weights {be} {' '.join(extra)}: P [1,2,12,12] matches numpy (max error {err}), "
           f"masked entries exactly 0: {bool(w is not None and (w[p == 0] == 0).all())} {r.stderr.strip()}")
        if be == "naive" and w is not None:
            hm = os.path.join(work, "heatmap")
            h = subprocess.run([sys.executable, heatmap, wpath, "--out", hm, "--tokens",
                                " ".join(f"t{i}" for i in range(12))], capture_output=True, text=True)
            pngs = sorted(f for f in os.listdir(hm)) if os.path.isdir(hm) else []
            ok(h.returncode == 0 and pngs == ["heatmap_h0.png", "heatmap_h1.png"] and
               all(os.path.getsize(os.path.join(hm, f)) > 5000 for f in pngs),
               f"heatmap.py draws one heatmap per head: {pngs} {h.stderr.strip()[-200:]}")
            # Row 0 of a causal map sees one key: entropy 0, the most concentrated row.
            ok("entropy" in h.stdout and "most concentrated: row 0 (entropy 0.000" in h.stdout and
               "mean diagonal weight" in h.stdout,
               "heatmap.py prints the row analysis (row 0 of a causal map has entropy 0)")

    # No size option: the case takes its shape from the files; a size given
    # must agree with them, and the others still come from the files.
    r = run("--backend=naive", "--inputs", os.path.join(work, "tiled-in"), "--reps", "1",
            "--min-time", "0.001")
    ok(r.returncode == 0 and "case: B=1 H=2 Nq=33 Nk=40 dk=16 dv=12" in r.stdout
       and "PASSED" in r.stdout, f"--inputs alone takes the case's shape from the files: exit "
       f"{r.returncode}, {r.stderr.strip()} {[l for l in r.stdout.splitlines() if 'case:' in l]}")
    r = run("--backend=naive", "--seq", "17", "--inputs", os.path.join(work, "naive-in"), "--reps", "0")
    ok(r.returncode == 0 and "case: B=2 H=3 Nq=17 Nk=17 dk=8 dv=8" in r.stdout,
       f"--inputs with --seq given: the other sizes from the files: exit {r.returncode}, "
       f"{r.stderr.strip()}")

    # NaN among the inputs: the non-finite contract. Every backend that runs
    # agrees element by element, PASSED with exit 0, and the run says how
    # many non-finite values the inputs hold: one NaN in K, then a K of NaN
    # alone (every output NaN: trusted, since each NaN was written).
    for name, where in (("one", (0, 1, 3, 2)), ("all", (slice(None),) * 4)):
        d = os.path.join(work, f"nan-{name}")
        q, k, v = inputs(d, 1, 2, 19, 19, 8, 8, np.float32)
        k[where] = np.nan
        np.save(os.path.join(d, "k.npy"), k)
        nans = int(np.isnan(k).sum())
        r = run("--backend=naive,tiled,blas,onednn", "--inputs", d, "--reps", "1", "--min-time",
                "0.001", "--csv", os.path.join(work, f"nan-{name}.csv"))
        rows = [l.split(",")[3] for l in open(os.path.join(work, f"nan-{name}.csv")).read().splitlines()[1:]] \
            if os.path.exists(os.path.join(work, f"nan-{name}.csv")) else []
        ok(r.returncode == 0 and rows and all(v in ("PASSED", "SKIPPED") for v in rows)
           and "PASSED" in rows
           and f"inputs: {nans} non-finite values in Q, K and V ({nans} NaN, 0 infinite)" in r.stdout,
           f"{nans} NaN in K: each backend PASSED by the non-finite contract, exit 0, the count "
           f"printed: exit {r.returncode}, verdicts {rows}, {r.stderr.strip()}")

    # Refusals: each one line on stderr, exit 2 or 3, nothing run.
    bad = os.path.join(work, "bad")
    shutil.copytree(os.path.join(work, "naive-in"), bad)
    np.save(os.path.join(bad, "k.npy"), np.zeros((2, 3, 17, 8), np.int32))
    base = ["--backend=naive", "--batch", "2", "--heads", "3", "--seq", "17", "--dk", "8"]
    refusals = [
        (base + ["--inputs", bad], 2, "dtype '<i4' is not float32, float64, float16 or uint16"),
        (["--backend=naive", "--batch", "2", "--heads", "3", "--seq", "16", "--dk", "8", "--inputs",
          os.path.join(work, "naive-in")], 2, "has shape (2, 3, 17, 8), the case needs (2, 3, 16, 8)"),
        (base + ["--inputs", os.path.join(work, "nowhere")], 2, "No such file"),
        (base + ["--dump-weights", os.path.join(work, "x.npy"), "--backend=tiled"], 2,
         "tiled cannot give its attention weights"),
        (["--backend=naive", "--seq", "65536", "--heads", "8", "--dump-weights",
          os.path.join(work, "x.npy")], 3, "above the 1 GiB limit"),
        (base + ["--backend=naive,tiled", "--dump-output", os.path.join(work, "x.npy")], 2,
         "--dump-output needs one backend"),
        (base + ["--seq", "16,17", "--dump-output", os.path.join(work, "x.npy")], 2,
         "needs one case, but the size options make 2 shapes"),
    ]
    with open(os.path.join(bad, "q.npy"), "rb") as f:
        data = f.read()
    cut = os.path.join(work, "cut")
    shutil.copytree(os.path.join(work, "naive-in"), cut)
    with open(os.path.join(cut, "q.npy"), "wb") as f:
        f.write(data[:-10])
    refusals.append((base + ["--inputs", cut], 2, "truncated"))
    for args, code, text in refusals:
        r = run(*args)
        ok(r.returncode == code and text in r.stderr and len(r.stderr.strip().splitlines()) == 1
           and not r.stdout, f"refused ({code}): {text!r}: got exit {r.returncode}, "
           f"{r.stderr.strip()}")

    # A NaN in a quantized cache's V, in the last key, which only the last
    # of 4 causal queries sees: q8_0 makes its block NaN, fp8 the one value;
    # naive, and tiled's decoding path for V that is not finite in a cut
    # tile, must give NaN exactly where the reference does (and PASS). The
    # error q8_0 costs is infinite (outputs NaN that are finite before
    # quantization); fp8's is not.
    d = os.path.join(work, "quant-nan")
    os.makedirs(d)
    q = rng.standard_normal((1, 4, 4, 32)).astype(np.float32)
    k = rng.standard_normal((1, 1, 300, 32)).astype(np.float32)
    v = rng.standard_normal((1, 1, 300, 32)).astype(np.float32)
    v[0, 0, 299, 5] = np.nan
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(d, name + ".npy"), x)
    for kv in ("q8_0", "fp8e4m3", "fp8e5m2"):
        r = run("--backend=naive,tiled", "--inputs", d, "--batch", "1", "--heads", "4",
                "--kv-heads", "1", "--seq", "4", "--seq-kv", "300", "--dk", "32", "--causal",
                "--kv-dtype", kv, "--reps", "1")
        inf = r.stdout.count("kv nmse inf")
        passed = sum(1 for line in r.stdout.splitlines()
                     if line.split()[:2] in (["naive", "PASSED"], ["tiled", "PASSED"]))
        ok(r.returncode == 0 and passed == 2 and inf == (2 if kv == "q8_0" else 0),
           f"a NaN in a {kv} V's last key: naive and tiled PASS with the reference's NaN: "
           f"exit {r.returncode}, {r.stdout[-600:]} {r.stderr[-300:]}")
    done()


if __name__ == "__main__":
    main()
