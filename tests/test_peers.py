"""TAP: scripts/peers on a small case: its rows land in attnbench's CSV with
attnbench's schema and keys, PASSED by attnbench's checker; a planted wrong
peer (the scale omitted) is FAILED by the same checker; attnbench --resume
continues the same CSV and plot.py draws both side by side.

    python3 test_peers.py ATTNBENCH PEERS_PY PLOT_PY OUT_DIR
    python3 test_peers.py --skip REASON
"""
import csv
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import diag, done, ok, skip_all_if_asked  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    skip_all_if_asked()
    attnbench, peers, plot, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    try:
        import torch  # noqa: F401
        torch_why = None
    except ImportError:
        torch_why = "python3-torch is not installed (Debian: python3-torch)"
    csv_path = os.path.join(out, "peers.csv")
    size = ["--seq", "64", "--heads", "2", "--dk", "16", "--causal=both", "--threads", "2",
            "--reps", "2", "--min-time", "0.001"]
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv", csv_path] + size,
                       capture_output=True, text=True)
    ok(r.returncode == 0, f"scripts/peers, N=64, causal both: exit {r.returncode} "
       f"{r.stderr.strip()[-300:]}")
    got = {(x["backend"], x["causal"]): x for x in rows(csv_path)} if os.path.exists(csv_path) else {}
    with open(csv_path) as f:
        header = f.readline()
    ok(header.startswith("schema,key,backend,verdict,"), "the CSV has attnbench's header")
    for c in ("0", "1"):
        x = got.get(("numpy", c), {})
        ok(x.get("verdict") == "PASSED" and x.get("schema") == "13" and float(x["real_median_s"]) > 0
           and x.get("key", "").startswith("attn/numpy/b:1/h:2/sq:64/skv:64/dk:16/dv:16/causal:" + c)
           and int(x.get("workspace_bytes") or 0) > 0,
           f"numpy causal={c}: PASSED, timed, keyed and with its workspace ({x.get('verdict')}, "
           f"{x.get('key')})")
        x = got.get(("torch-math", c), {})
        if torch_why:
            ok(x.get("verdict") == "SKIPPED" and torch_why in x.get("reason", ""),
               f"torch-math causal={c}: SKIPPED, saying why ({x.get('reason')})")
        else:
            ok(x.get("verdict") == "PASSED" and float(x["real_median_s"]) > 0,
               f"torch-math causal={c}: PASSED and timed ({x.get('verdict')} {x.get('reason')})")
        x = got.get(("torch-sdpa", c), {})
        ok(x.get("verdict") in ("PASSED", "SKIPPED") and (x["verdict"] == "PASSED" or x["reason"]),
           f"torch-sdpa causal={c}: {x.get('verdict')} ({x.get('reason') or 'ran'})")
    # Done twice: --resume skips what the CSV holds.
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv", csv_path,
                        "--resume"] + size, capture_output=True, text=True)
    ok(r.returncode == 0 and len(rows(csv_path)) == 6 and "verdict" not in r.stdout,
       f"--resume runs nothing the CSV holds ({len(rows(csv_path))} rows, exit {r.returncode})")

    # Grouped K/V heads, GQA and MQA: decoding and a causal prefill with Nq < Nk
    # (its mask tiled over the group), checked by attnbench and keyed as its own
    # rows are.
    gqa = os.path.join(out, "gqa.csv")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv", gqa,
                        "--backend=numpy,torch-math", "--heads", "4", "--kv-heads", "2,1",
                        "--seq", "1,24", "--seq-kv", "40", "--dk", "16", "--causal=yes",
                        "--threads", "2", "--reps", "1", "--min-time", "0.001"],
                       capture_output=True, text=True)
    got = rows(gqa) if os.path.exists(gqa) else []
    want = {"numpy": "PASSED", "torch-math": "SKIPPED" if torch_why else "PASSED"}
    ok(r.returncode == 0 and len(got) == 8 and
       all(x["verdict"] == want[x["backend"]] and x["kv_heads"] in ("2", "1") and
           f"/hkv:{x['kv_heads']}/" in x["key"] for x in got),
       f"--kv-heads 2,1 of 4 heads, Nq = 1 and 24 of 40 keys, causal: numpy and "
       f"torch-math {want['torch-math']}, keyed /hkv: ({[x['verdict'] for x in got]}; exit "
       f"{r.returncode} {r.stderr.strip()[-300:]})")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--heads", "4",
                        "--kv-heads", "3"], capture_output=True, text=True)
    ok(r.returncode == 2 and "3 does not divide --heads 4" in r.stderr,
       f"--kv-heads 3 of 4 heads is refused, saying why: {r.stderr.strip()}")

    planted = os.path.join(out, "planted.csv")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv", planted,
                        "--backend=numpy", "--plant", "no-scale"] + size,
                       capture_output=True, text=True)
    bad = rows(planted) if os.path.exists(planted) else []
    ok(r.returncode == 1 and len(bad) == 2 and all(x["verdict"] == "FAILED" for x in bad),
       f"planted: numpy without the scale is FAILED by attnbench's checker (exit {r.returncode}, "
       f"{[x['verdict'] for x in bad]})")
    if bad:
        diag(bad[0]["reason"])

    # The backward: torch-math's autograd checked on dQ, dK, dV; numpy says it has none;
    # torch-math without the scale FAILS there too.
    back = os.path.join(out, "backward.csv")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv", back,
                        "--backend=torch-math,numpy", "--pass", "bwd,fwdbwd"] + size,
                       capture_output=True, text=True)
    got = {(x["backend"], x["causal"], x["pass"]): x for x in rows(back)} \
        if os.path.exists(back) else {}
    tm = [got.get(("torch-math", c, ps), {}) for c in ("0", "1") for ps in ("bwd", "fwdbwd")]
    if torch_why:
        ok(all(x.get("verdict") == "SKIPPED" for x in tm), "torch-math backward: SKIPPED, "
           f"saying why ({[x.get('reason') for x in tm]})")
    else:
        ok(all(x.get("verdict") == "PASSED" and x.get("dq_nmse") and float(x["real_median_s"]) > 0
               for x in tm), f"torch-math backward, bwd and fwdbwd, causal both: PASSED on dQ, "
           f"dK, dV and timed ({[x.get('verdict') for x in tm]}; exit {r.returncode} "
           f"{r.stderr.strip()[-300:]})")
    nb = got.get(("numpy", "0", "bwd"), {})
    ok(nb.get("verdict") == "SKIPPED" and "no backward" in nb.get("reason", ""),
       f"numpy backward: SKIPPED, saying why ({nb.get('reason')})")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv",
                        os.path.join(out, "planted-bwd.csv"), "--backend=torch-math", "--pass",
                        "bwd", "--plant", "no-scale"] + size, capture_output=True, text=True)
    bad = rows(os.path.join(out, "planted-bwd.csv")) \
        if os.path.exists(os.path.join(out, "planted-bwd.csv")) else []
    if torch_why:
        ok(all(x["verdict"] == "SKIPPED" for x in bad), f"planted backward: SKIPPED ({torch_why})")
    else:
        ok(r.returncode == 1 and len(bad) == 2 and all(x["verdict"] == "FAILED" for x in bad),
           f"planted: torch-math's backward without the scale is FAILED (exit {r.returncode}, "
           f"{[x['verdict'] for x in bad]})")
        if bad:
            diag(bad[0]["reason"])

    # 16-bit peers: the inputs rounded by attnbench (--dtype), computed in that type; a
    # list runs each case in each type.
    half = os.path.join(out, "bf16.csv")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--csv", half,
                        "--backend=torch-math,numpy", "--dtype", "bf16,fp16"] + size,
                       capture_output=True, text=True)
    got = {(x["backend"], x["dtype"], x["causal"]): x for x in rows(half)} \
        if os.path.exists(half) else {}
    for dt in ("bf16", "fp16"):
        tm = [got.get(("torch-math", dt, c), {}) for c in ("0", "1")]
        ok(all(f"/dtype:{dt}/" in x.get("key", "") and x.get("dtype") == dt and
               (x.get("verdict") == "PASSED" or x.get("verdict") == "SKIPPED" and x.get("reason"))
               for x in tm), f"--dtype bf16,fp16: torch-math's {dt} rows keyed and typed {dt}, "
           f"checked in its class ({[(x.get('verdict'), x.get('reason')) for x in tm]}; "
           f"exit {r.returncode})")
    nb = got.get(("numpy", "bf16", "0"), {})
    ok(nb.get("verdict") == "SKIPPED" and "numpy computes in fp32" in nb.get("reason", ""),
       f"--dtype bf16: numpy SKIPPED, saying why ({nb.get('reason')})")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--dtype", "fp16,fp8"],
                       capture_output=True, text=True)
    ok(r.returncode == 2 and "--dtype: 'fp8' is not one of" in r.stderr,
       f"--dtype with an unknown type is refused: {r.stderr.strip()}")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench,
                        "--backend=torch-sdpa-cuda,numpy"], capture_output=True, text=True)
    ok(r.returncode == 2 and "mixes CUDA and CPU peers" in r.stderr,
       f"CUDA and CPU peers in one run are refused: {r.stderr.strip()}")
    r = subprocess.run([sys.executable, peers, "--attnbench", attnbench, "--device", "cuda"] + size,
                       capture_output=True, text=True)
    cuda = not torch_why and "sees no CUDA device" not in r.stderr
    if cuda:
        ok(r.returncode == 0, f"--device cuda on a machine with CUDA ran (exit {r.returncode})")
    else:
        ok(r.returncode == 2 and ("sees no CUDA device" in r.stderr or torch_why in r.stderr),
           f"--device cuda without a CUDA device refuses, saying why: {r.stderr.strip()}")

    # A peer on a GPU says so in its times (what scripts/peers --device cuda
    # writes): the row carries the device, its memory and the transfers, and
    # nothing against the host's peaks (here a planted --peak file).
    gdir = os.path.join(out, "gpu")
    os.makedirs(gdir)
    one = ["--seq", "64", "--heads", "2", "--dk", "16", "--threads", "2"]
    subprocess.run([attnbench, "--dump-inputs", gdir] + one, check=True)
    # A copy of attnbench with a planted --peak file beside it, for this CPU.
    m = re.search(r"^machine: (.*), \d+ CPUs", subprocess.run(
        [attnbench, "--backend=naive", "--reps", "0"] + one, capture_output=True,
        text=True).stdout, re.M)
    bench = os.path.join(gdir, "attnbench")
    shutil.copy(attnbench, bench)
    with open(os.path.join(gdir, "attnbench-peak.txt"), "w") as f:
        f.write(f"cpu={m.group(1) if m else '?'}\nthreads=2\nisa=c\nfma_gflops_1=1\n"
                "fma_gflops_t=2\ntriad_gbs=1\nbf16_gflops_1=1\nbf16_gflops_t=2\nread_gbs=1\n")
    import numpy as np
    q, k, v = (np.load(os.path.join(gdir, f"{t}.npy")).astype(np.float64) for t in "qkv")
    sc = q @ k.swapaxes(-1, -2) / 4.0
    p = np.exp(sc - sc.max(-1, keepdims=True))
    np.save(os.path.join(gdir, "o.npy"), (p / p.sum(-1, keepdims=True) @ v).astype(np.float32))
    with open(os.path.join(gdir, "times"), "w") as f:
        f.write("iterations 10\n0.001 0.001\n0.002 0.002\ndevice Planted GPU (CUDA 0.0)\n"
                "device_bytes 123456\nupload_s 0.25\ndownload_s 0.125\n")
    with open(os.path.join(gdir, "cpu-times"), "w") as f:
        f.write("iterations 10\n0.001 0.001\n0.002 0.002\n")
    gcsv = os.path.join(gdir, "gpu.csv")
    for name, times in (("planted-cpu", "cpu-times"), ("planted-cuda", "times")):
        r = subprocess.run([bench, "--peer", name, "--check-output",
                            os.path.join(gdir, "o.npy"), "--peer-times",
                            os.path.join(gdir, times), "--csv", gcsv, "--resume"] + one,
                           capture_output=True, text=True)
    got = {x["backend"]: x for x in rows(gcsv)} if os.path.exists(gcsv) else {}
    c = got.get("planted-cpu", {})
    ok(c.get("device") == "host" and c.get("pct_roofline") not in (None, "") and c.get("bound"),
       f"a CPU peer's row is held to the planted peaks ({c.get('pct_roofline')!r}, "
       f"{c.get('bound')!r})")
    x = got.get("planted-cuda", {})
    ok(r.returncode == 0 and x.get("verdict") == "PASSED" and
       x.get("device") == "Planted GPU (CUDA 0.0)" and x.get("device_bytes") == "123456" and
       x.get("upload_s") == "0.25" and x.get("download_s") == "0.125" and
       float(x.get("real_median_s") or 0) == 0.0015,
       f"a GPU peer's row: device, device memory, upload and download from its times "
       f"({x.get('verdict')}, {x.get('device')}, {x.get('device_bytes')}, {x.get('upload_s')}; "
       f"exit {r.returncode} {r.stderr.strip()[-200:]})")
    ok(x.get("pct_roofline") == "" and x.get("pct_peak") == "" and x.get("bound") == "",
       f"... and no roofline, %peak or bound from the host CPU's figures "
       f"({x.get('pct_roofline')!r}, {x.get('pct_peak')!r}, {x.get('bound')!r})")

    r = subprocess.run([attnbench, "--backend=naive,tiled", "--csv", csv_path, "--resume"] + size,
                       capture_output=True, text=True)
    ok(r.returncode == 0 and len(rows(csv_path)) == 10,
       f"attnbench --resume continues the peers' CSV ({len(rows(csv_path))} rows, exit "
       f"{r.returncode} {r.stderr.strip()[-200:]})")
    r = subprocess.run([sys.executable, plot, csv_path, "--out", os.path.join(out, "charts")],
                       capture_output=True, text=True)
    ok(r.returncode == 0 and os.path.exists(os.path.join(out, "charts", "time.png")),
       f"plot.py draws peers and backends together: exit {r.returncode} {r.stderr.strip()[-300:]}")

    arch_csv = os.path.join(out, "arch-torch.csv")
    r = subprocess.run([sys.executable, peers, "arch", "--batch", "2", "--dmodel", "16", "--seq",
                        "8,16", "--reps", "1", "--min-time", "0.001", "--threads", "2", "--csv",
                        arch_csv], capture_output=True, text=True)
    if torch_why:
        ok(r.returncode == 2 and torch_why in r.stderr,
           f"peers arch without PyTorch refuses, saying why: {r.stderr.strip()}")
    else:
        got = rows(arch_csv) if os.path.exists(arch_csv) else []
        ok(r.returncode == 0 and len(got) == 8 and all(x["verdict"] == "RAN" and
                                                       float(x["median_s"]) > 0 for x in got),
           f"peers arch: the four models in PyTorch at two N, timed ({len(got)} rows, exit "
           f"{r.returncode} {r.stderr.strip()[-200:]})")
    done()


if __name__ == "__main__":
    main()
