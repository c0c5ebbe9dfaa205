"""scripts/peers: the frameworks people run today, measured on attnbench's
cases beside its backends (Debian's python3-numpy and python3-torch).
`scripts/peers arch [--seq .. --batch .. --dmodel ..]` times attnbench arch's
four models written in PyTorch (nn.LSTM + Linear; two Conv1d, ReLU, residual,
LayerNorm; single-head attention with its projections; nn.MultiheadAttention)
on the same shapes; their rows say RAN: their weights are PyTorch's own, so
attnbench cannot check them, only that every output is finite.

    scripts/peers --seq 1024:8192:x2 --heads 8 --dk 64,128 --causal=both \
        --threads 2 --csv peers.csv
    scripts/peers --device cuda --backend torch-sdpa --dtype fp16 --seq 4096 \
        --csv gpu.csv     # PyTorch on a CUDA GPU: rows torch-sdpa-cuda

--dtype fp16 or bf16 takes attnbench's inputs rounded to that type (its
--dtype) and computes in it (numpy SKIPS: it has no bf16 and no fast fp16);
a list (fp16,bf16) runs each case in each, in attnbench's order.
--device cuda runs the torch peers on the first CUDA device of the PyTorch
in use; their names gain -cuda, the inputs are on the GPU before timing
(the upload and the download are timed once each, outside the timed runs,
as the vulkan backends' are), every run ends with torch.cuda.synchronize(),
and the row carries the device's name, the memory PyTorch allocated on it
(inputs included) and the transfer times.

Peers:
  torch-sdpa  torch.nn.functional.scaled_dot_product_attention (PyTorch 2.0
              and later; is_causal is top-left aligned, so a causal case with
              Nq != Nk passes the bottom-right mask explicitly)
  torch-math  matmul, masked_fill, softmax, matmul: what a user writes
  numpy       matmul, a max-subtracted softmax, matmul

For every case attnbench writes the inputs (--dump-inputs), the peer computes
O from them, timed with attnbench's discipline (warm-up runs lasting at least
--min-time, runs per repetition calibrated to --min-time, --reps repetitions
within --max-time), and attnbench checks O against its reference with its
checker and appends the row to --csv in its own schema (--check-output
--peer), so plot.py, --resume and compare tooling treat peers like backends.
A row that sees no key is set to zeros, as the contract asks.

Grouped K/V heads (--kv-heads, GQA and MQA): the query heads of one K/V
head are stacked as that head's rows ([B, Hkv, G Nq, d], a view: K and V are
never copied), what a decoding kernel does; a causal case then passes its
mask, tiled over the G heads, explicitly.

The backward (--pass bwd, fwdbwd): torch-math's autograd through the same
explicit attention, from attnbench's dO (do.npy): bwd times
torch.autograd.grad of the forward's graph (kept, as a training step has
it), fwdbwd the forward and the gradients together; dQ, dK, dV go to
attnbench's checker beside O. numpy and torch-sdpa have no backward here and
say so (SKIPPED).
"""
import argparse
import ctypes
import itertools
import math
import os
import subprocess
import sys
import tempfile
import threading
import time

PEERS = ["torch-sdpa", "torch-math", "numpy"]
DTYPES = ["fp32", "fp16", "bf16"]


def die(msg, code=2):
    print(f"peers: {msg}", file=sys.stderr)
    sys.exit(code)


def sizes(name, text, lo, hi):
    """attnbench's SIZES: 64, 1,8,16, 256:4096:x2, 16:64:+16, or a mix."""
    out = []
    for item in text.split(","):
        parts = item.split(":")
        try:
            if len(parts) == 1:
                vals = [int(parts[0])]
            elif len(parts) == 3 and parts[2][:1] in "x+":
                a, b, step = int(parts[0]), int(parts[1]), int(parts[2][1:])
                if a > b or step < (2 if parts[2][0] == "x" else 1):
                    raise ValueError
                vals, v = [], a
                while v <= b:
                    vals.append(v)
                    v = v * step if parts[2][0] == "x" else v + step
            else:
                raise ValueError
        except ValueError:
            die(f"--{name}: '{item}' is not a size, a list or a range START:END:xF / +S")
        for v in vals:
            if not lo <= v <= hi:
                die(f"--{name}: {v} is not in [{lo}, {hi}]")
        out += vals
    return out


def options():
    ap = argparse.ArgumentParser(prog="scripts/peers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default=",".join(PEERS),
                    help=f"peers to run, of {','.join(PEERS)} (default all)")
    for name, default in (("batch", "1"), ("heads", "8"), ("kv-heads", None), ("seq", "1024"),
                          ("seq-kv", None), ("dk", "64"), ("dv", None)):
        ap.add_argument(f"--{name}", default=default, metavar="SIZES")
    ap.add_argument("--causal", nargs="?", const="yes", default="no",
                    choices=["yes", "no", "both", "on", "off", "1", "0"])
    ap.add_argument("--scale", type=float, default=None)
    ap.add_argument("--pass", dest="passes", default="fwd",
                    help="fwd, bwd, fwdbwd or a list (attnbench's --pass)")
    ap.add_argument("--fill", default="normal", choices=["normal", "extreme"])
    ap.add_argument("--dtype", default="fp32", metavar="TYPES",
                    help="storage and arithmetic types of the inputs, a list of "
                         f"{', '.join(DTYPES)} (attnbench's --dtype)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where the torch peers compute (cuda: rows named PEER-cuda)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--max-time", type=float, default=10.0)
    ap.add_argument("--check-rows", default="auto")
    ap.add_argument("--csv", help="append one row per case to this attnbench CSV")
    ap.add_argument("--resume", action="store_true",
                    help="with --csv: skip the cases it already holds")
    ap.add_argument("--attnbench", default=os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "build", "attnbench"), help="the attnbench executable")
    ap.add_argument("--plant", choices=["no-scale"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.peers = a.backend.split(",")
    # A row's repro names a CUDA peer PEER-cuda: the same as --device cuda.
    if any(p.endswith("-cuda") for p in a.peers):
        if not all(p.endswith("-cuda") for p in a.peers):
            die(f"--backend: '{a.backend}' mixes CUDA and CPU peers (one device per run)")
        a.peers = [p[:-len("-cuda")] for p in a.peers]
        a.device = "cuda"
    for p in a.peers:
        if p not in PEERS:
            die(f"--backend: unknown peer '{p}' (known: {', '.join(PEERS)})")
    if a.device == "cuda":
        if a.backend == ",".join(PEERS):
            a.peers = [p for p in PEERS if p != "numpy"]
        elif "numpy" in a.peers:
            die("--device cuda: numpy computes on the CPU only (peers on CUDA: torch-sdpa, "
                "torch-math)")
    a.batch = sizes("batch", a.batch, 1, 65536)
    a.heads = sizes("heads", a.heads, 1, 4096)
    a.kv_heads = sizes("kv-heads", a.kv_heads, 1, 4096) if a.kv_heads else None
    for h in a.heads:
        for g in a.kv_heads or []:
            if h % g:
                die(f"--kv-heads: {g} does not divide --heads {h}")
    a.seq = sizes("seq", a.seq, 1, 1 << 24)
    a.seq_kv = sizes("seq-kv", a.seq_kv, 1, 1 << 24) if a.seq_kv else None
    a.dk = sizes("dk", a.dk, 1, 4096)
    a.dv = sizes("dv", a.dv, 1, 4096) if a.dv else None
    a.dtypes = a.dtype.split(",")
    for dt in a.dtypes:
        if dt not in DTYPES or a.dtypes.count(dt) > 1:
            die(f"--dtype: '{dt}' is not one of {', '.join(DTYPES)} (each once)")
    a.passes = a.passes.split(",")
    for ps in a.passes:
        if ps not in ("fwd", "bwd", "fwdbwd") or a.passes.count(ps) > 1:
            die(f"--pass: '{ps}' is not one of fwd, bwd, fwdbwd (each once)")
    a.causal = {"yes": [1], "on": [1], "1": [1], "no": [0], "off": [0], "0": [0],
                "both": [0, 1]}[a.causal]
    if not 1 <= a.threads <= 1024:
        die(f"--threads: {a.threads} is not in [1, 1024]")
    if not 0 <= a.reps <= 100:
        die(f"--reps: {a.reps} is not in [0, 100]")
    if a.resume and not a.csv:
        die("--resume needs --csv FILE")
    if not os.access(a.attnbench, os.X_OK):
        die(f"--attnbench: {a.attnbench} is not an executable (build it: scripts/setup)")
    return a


def shapes(a):
    """attnbench's order: batch, heads, kv_heads, seq, seq_kv, dk, dv, dtype, causal,
    pass (fastest)."""
    for b in a.batch:
        for h in a.heads:
            for hkv in a.kv_heads or [h]:
                for nq in a.seq:
                    for nk in a.seq_kv or [nq]:
                        for dk in a.dk:
                            for dv, dt in itertools.product(a.dv or [dk], a.dtypes):
                                for c in a.causal:
                                    for ps in a.passes:
                                        yield dict(b=b, h=h, hkv=hkv, nq=nq, nk=nk, dk=dk,
                                                   dv=dv, dtype=dt, causal=c, ps=ps)


def case_args(a, s):
    """The case as attnbench options (the same for every call about it)."""
    args = ["--batch", str(s["b"]), "--heads", str(s["h"]), "--kv-heads", str(s["hkv"]),
            "--seq", str(s["nq"]),
            "--seq-kv", str(s["nk"]), "--dk", str(s["dk"]), "--dv", str(s["dv"]),
            "--causal=" + ("yes" if s["causal"] else "no"), "--fill", a.fill, "--dtype", s["dtype"],
            "--seed", str(a.seed), "--threads", str(a.threads), "--check-rows", a.check_rows]
    if a.scale is not None:
        args += ["--scale", repr(a.scale)]
    if s["ps"] != "fwd":
        args += ["--pass", s["ps"]]
    return args


def done_keys(a):
    """The keys (second column) of the rows --csv already holds."""
    if not (a.resume and a.csv and os.path.exists(a.csv)):
        return set()
    with open(a.csv) as f:
        return {line.split(",")[1] for line in f.readlines()[1:] if line.count(",") > 2}


def key(a, s, peer, np):
    """attnbench's case key (harness/problem.c), to skip what --csv holds."""
    k = (f"attn/{peer}/b:{s['b']}/h:{s['h']}/sq:{s['nq']}/skv:{s['nk']}/dk:{s['dk']}"
         f"/dv:{s['dv']}/causal:{s['causal']}")
    if s["hkv"] != s["h"]:
        k += f"/hkv:{s['hkv']}"
    if s["dtype"] != "fp32":
        k += f"/dtype:{s['dtype']}"
    if a.scale is not None and np.float32(a.scale) != np.float32(1.0 / math.sqrt(s["dk"])):
        k += f"/scale:{float(np.float32(a.scale)):.9g}"
    if a.fill != "normal":
        k += f"/fill:{a.fill}"
    if s["ps"] != "fwd":
        k += f"/pass:{s['ps']}"
    return k + f"/threads:{a.threads}/seed:{a.seed}"


def rss_reset():
    """Resets the peak RSS as the harness does, after handing the C heap's
    free memory back (what earlier cases freed would otherwise be reused
    unseen); the current RSS, or None where the kernel refuses."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return rss_read()[1]
    except OSError:
        return None


def rss_read():
    hwm = rss = None
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return hwm, rss


def quiesce(max_s=1.0):
    """attnbench's attn_quiesce: wait until no other thread of this process
    is runnable (a BLAS or OpenMP pool spinning after its last call), two
    polls 2 ms apart in a row, for at most max_s."""
    me, t0, quiet = threading.get_native_id(), time.monotonic(), 0
    while quiet < 2 and time.monotonic() - t0 < max_s:
        time.sleep(0.002)
        busy = False
        for tid in os.listdir("/proc/self/task"):
            if int(tid) == me:
                continue
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    busy |= f.read().rsplit(")", 1)[1].split()[0] == "R"
            except (OSError, IndexError):
                pass
        quiet = 0 if busy else quiet + 1


def time_runs(fn, a):
    """attnbench's timer (harness/timer.c): seconds per run, wall and CPU."""
    quiesce()
    t0, warm = time.monotonic(), 0
    while warm < a.warmup or time.monotonic() - t0 < a.min_time:
        fn()
        warm += 1
    per = (time.monotonic() - t0) / warm
    iters = max(1, math.ceil(a.min_time / per)) if per > 0 else 1
    real, cpu, budget = [], [], False
    start = time.monotonic()
    for _ in range(a.reps):
        c0, r0 = time.process_time(), time.monotonic()
        for _ in range(iters):
            fn()
        r1, c1 = time.monotonic(), time.process_time()
        real.append((r1 - r0) / iters)
        cpu.append((c1 - c0) / iters)
        if a.max_time > 0 and 2 <= len(real) < a.reps and r1 - start >= a.max_time:
            budget = True
            break
    return iters, real, cpu, budget


def visible(s, np):
    """[Nq][Nk] bool: query i sees key j (causal: bottom-right aligned)."""
    i = np.arange(s["nq"])[:, None]
    j = np.arange(s["nk"])[None, :]
    if not s["causal"]:
        return np.ones((s["nq"], s["nk"]), dtype=bool)
    return j <= i + s["nk"] - s["nq"]


def make_numpy(np, q, k, v, scale, vis):
    empty = ~vis.any(-1)[:, None]

    def run():
        s = np.matmul(q, np.swapaxes(k, -1, -2))
        s *= np.float32(scale)
        if not vis.all():
            s = np.where(vis, s, np.float32(-np.inf))
        m = s.max(-1, keepdims=True)
        m = np.where(np.isfinite(m), m, np.float32(0))
        p = np.exp(s - m)
        p /= np.maximum(p.sum(-1, keepdims=True), np.float32(np.finfo(np.float32).tiny))
        o = np.matmul(p, v)
        return np.where(empty, np.float32(0), o) if empty.any() else o
    return run


class Place:
    """Where and in what type the torch peers compute: the device, the dtype,
    and what ends a timed run (torch.cuda.synchronize on a GPU)."""

    def __init__(self, torch, device, dtype):
        self.torch = torch
        self.cuda = device == "cuda"
        self.device = torch.device(device)
        self.dtype = {"fp32": torch.float32, "fp16": torch.float16,
                      "bf16": torch.bfloat16}[dtype]
        self.sync = torch.cuda.synchronize if self.cuda else (lambda: None)

    def tensor(self, x, exact=False):
        """x (numpy) on the device, in the peers' dtype unless exact."""
        t = self.torch.from_numpy(x)
        return t.to(self.device) if exact else t.to(self.device, self.dtype)

    def name(self):
        """The device as the row's device column gives it ('' on the CPU)."""
        if not self.cuda:
            return ""
        cv = self.torch.version.cuda or "?"
        return (f"{self.torch.cuda.get_device_name(self.device)} "
                f"(CUDA {cv}, torch {self.torch.__version__})")


def host(o):
    """A peer's result (a tensor anywhere, in any type, or numpy) as fp32 numpy."""
    return o if not hasattr(o, "detach") else o.detach().float().cpu().numpy()


def make_torch(torch, q, k, v, scale, vis, sdpa, at, scale_given, square):
    t0 = time.monotonic()
    q, k, v = (at.tensor(x) for x in (q, k, v))
    at.sync()
    upload_s = time.monotonic() - t0
    masked = not bool(vis.all())
    mask = at.tensor(vis, exact=True)
    empty = at.tensor(~vis.any(-1), exact=True)[:, None]
    any_empty = bool(empty.any())
    top_left = masked and square   # is_causal's mask is this one

    def finish(o):
        return o.masked_fill(empty, 0.0) if any_empty else o

    if sdpa:
        F = torch.nn.functional
        kw = {"scale": scale} if scale_given else {}

        def run():
            with torch.no_grad():
                if top_left:
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **kw)
                else:
                    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask if masked else None,
                                                       **kw)
                o = finish(o)
                at.sync()
                return o
        run.upload_s = upload_s
        return run

    def run():
        with torch.no_grad():
            s = torch.matmul(q, k.transpose(-1, -2)) * scale
            if masked:
                s = s.masked_fill(~mask, float("-inf"))
            o = finish(torch.matmul(torch.softmax(s, dim=-1), v))
            at.sync()
            return o
    run.upload_s = upload_s
    return run


def make_torch_grad(torch, q, k, v, dout, scale, vis, fwdbwd, at):
    """torch-math's backward by autograd: a function returning O, dQ, dK, dV
    (tensors); bwd keeps the forward's graph and times the gradients alone."""
    t0 = time.monotonic()
    q, k, v = (at.tensor(x).requires_grad_() for x in (q, k, v))
    d = at.tensor(dout)
    at.sync()
    upload_s = time.monotonic() - t0
    masked = not bool(vis.all())
    mask = at.tensor(vis, exact=True)
    empty = at.tensor(~vis.any(-1), exact=True)[:, None]
    any_empty = bool(empty.any())

    def forward():
        s = torch.matmul(q, k.transpose(-1, -2)) * scale
        if masked:
            s = s.masked_fill(~mask, float("-inf"))
        if any_empty:   # a row that sees no key: 0, and no gradient
            s = s.masked_fill(empty, 0.0)
        o = torch.matmul(torch.softmax(s, dim=-1), v)
        return o.masked_fill(empty, 0.0) if any_empty else o

    o = None if fwdbwd else forward()

    def run():
        out = forward() if fwdbwd else o
        g = torch.autograd.grad(out, (q, k, v), d, retain_graph=not fwdbwd)
        at.sync()
        return (out.detach(),) + tuple(g)
    run.upload_s = upload_s
    return run


ARCH_MODELS = ["rnn", "cnn", "attention", "mha"]


def arch_options(argv):
    ap = argparse.ArgumentParser(prog="scripts/peers arch",
                                 description="attnbench arch's models in PyTorch")
    ap.add_argument("--seq", default="64,128,256,512", metavar="SIZES")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dmodel", type=int, default=512)
    ap.add_argument("--models", default=",".join(ARCH_MODELS))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--max-time", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", help="write one row per model and N (overwrites it)")
    a = ap.parse_args(argv)
    a.seq = sizes("seq", a.seq, 1, 1 << 20)
    a.models = a.models.split(",")
    for m in a.models:
        if m not in ARCH_MODELS:
            die(f"--models: unknown model '{m}' ({', '.join(ARCH_MODELS)})")
    if a.dmodel % 8:
        die(f"--dmodel {a.dmodel}: attention needs a multiple of 8 (d_k = d/8)")
    if not 1 <= a.reps <= 100:
        die(f"--reps: {a.reps} is not in [1, 100]")
    return a


def arch_model(torch, name, d):
    """The models of arch/arch.h, as PyTorch modules; forward(x [B][N][d])."""
    nn = torch.nn

    class Rnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.lin = nn.LSTM(d, d, batch_first=True), nn.Linear(d, d)

        def forward(self, x):
            return self.lin(self.lstm(x)[0])

    class Cnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv1d(d, d, 3, padding=1), nn.Conv1d(d, d, 3, padding=1)
            self.ln = nn.LayerNorm(d)

        def forward(self, x):
            h = self.c2(torch.relu(self.c1(x.transpose(1, 2)))).transpose(1, 2)
            return self.ln(x + h)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(d, d // 8, bias=False) for _ in range(3))

        def forward(self, x):
            q, k, v = self.q(x), self.k(x), self.v(x)
            s = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(d // 8)
            return torch.matmul(torch.softmax(s, dim=-1), v)

    class Mha(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(d, 8, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False)[0]

    return {"rnn": Rnn, "cnn": Cnn, "attention": Attention, "mha": Mha}[name]()


def arch_main(argv):
    a = arch_options(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    try:
        import torch
    except ImportError:
        die("python3-torch is not installed (Debian: python3-torch)")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rows = []
    print(f"PyTorch {torch.__version__} arch: B={a.batch} d_model={a.dmodel} threads={a.threads}")
    print(f"{'model':<10} {'N':>6} {'verdict':<8} {'median':>12} {'cv':>6}")
    for n in a.seq:
        for m in a.models:
            # The N x N scores (B x heads of them) are formed, as in PyTorch 1.13's
            # attention: refuse what would not fit, with the numbers.
            heads = {"attention": 1, "mha": 8}.get(m, 0)
            need = 3 * 4.0 * a.batch * heads * n * n
            avail = 0
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        avail = int(line.split()[1]) * 1024
            row = dict(model="torch-" + m, seq=n, batch=a.batch, dmodel=a.dmodel,
                       threads=a.threads, verdict="RAN", reason="", median_s="", min_s="",
                       mean_s="", cv="", reps="", iterations="")
            if avail and need > avail / 2:
                row.update(verdict="SKIPPED", reason=f"its {a.batch}x{heads} score matrices of "
                           f"{n}x{n} need about {need / 2**30:.1f} GiB, over half of the "
                           f"{avail / 2**30:.1f} GiB available")
            else:
                model = arch_model(torch, m, a.dmodel).eval()
                x = torch.randn(a.batch, n, a.dmodel)

                def fwd():
                    with torch.no_grad():
                        return model(x)
                if not bool(torch.isfinite(fwd()).all()):
                    row.update(verdict="FAILED", reason="a NaN or Inf in the output")
                else:
                    iters, real, _, _ = time_runs(fwd, a)
                    med = sorted(real)[len(real) // 2] if len(real) % 2 else \
                        sum(sorted(real)[len(real) // 2 - 1:len(real) // 2 + 1]) / 2
                    mean = sum(real) / len(real)
                    sd = math.sqrt(sum((t - mean) ** 2 for t in real) / max(1, len(real) - 1))
                    row.update(median_s=med, min_s=min(real), mean_s=mean, cv=sd / mean,
                               reps=len(real), iterations=iters)
            rows.append(row)
            t = f"{row['median_s'] * 1e3:.2f} ms" if row["median_s"] != "" else "-"
            cv = f"{100 * row['cv']:.1f}%" if row["cv"] != "" else "-"
            print(f"{m:<10} {n:>6} {row['verdict']:<8} {t:>12} {cv:>6} {row['reason']}",
                  flush=True)
    if a.csv:
        import csv
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 1 if any(r["verdict"] == "FAILED" for r in rows) else 0

def main():
    if sys.argv[1:2] == ["arch"]:
        return arch_main(sys.argv[2:])
    a = options()
    # Every threading runtime the peers load takes its count from these,
    # read when the library loads: set before the imports.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    try:
        import numpy as np
    except ImportError:
        die("numpy is not installed (Debian: python3-numpy); run with the python3 that has it")
    try:
        import torch
        torch.set_num_threads(a.threads)
        torch_why = None
    except ImportError:
        torch, torch_why = None, "python3-torch is not installed (Debian: python3-torch)"
    import tracemalloc

    at = None
    if a.device == "cuda":
        if torch is None:
            die(f"--device cuda: {torch_why}")
        if not torch.cuda.is_available():
            die(f"--device cuda: torch {torch.__version__} sees no CUDA device")
    if torch is not None:
        places = {dt: Place(torch, a.device, dt) for dt in a.dtypes}
        at = places[a.dtypes[0]]
    suffix = "-cuda" if a.device == "cuda" else ""
    print(f"peers: numpy {np.__version__}" +
          (f", torch {torch.__version__}" if torch else f"; {torch_why}") +
          f"; {a.threads} threads" + (f"; on {at.name()}" if a.device == "cuda" else ""),
          flush=True)
    held = done_keys(a)
    rc = 0
    with tempfile.TemporaryDirectory(prefix="attnbench-peers-") as tmp:
        for s in shapes(a):
            todo = [p for p in a.peers if key(a, s, p + suffix, np) not in held]
            if not todo:
                continue
            if torch is not None:
                at = places[s["dtype"]]
            args = case_args(a, s)
            r = subprocess.run([a.attnbench, "--dump-inputs", tmp] + args, capture_output=True,
                               text=True)
            if r.returncode != 0:
                die(f"attnbench --dump-inputs: {r.stderr.strip()}", r.returncode)
            q, k, v = (np.load(os.path.join(tmp, f"{t}.npy")) for t in "qkv")
            scale = a.scale if a.scale is not None else 1.0 / math.sqrt(s["dk"])
            if a.plant == "no-scale":
                scale = 1.0
            vis = visible(s, np)
            # Grouped heads: each K/V head's query heads stacked as its rows.
            g = s["h"] // s["hkv"]
            shape_o = (s["b"], s["h"], s["nq"], s["dv"])
            if g > 1:
                q = q.reshape(s["b"], s["hkv"], g * s["nq"], s["dk"])
                vis = np.tile(vis, (g, 1))
            for peer in todo:
                why = None
                if peer.startswith("torch") and torch is None:
                    why = torch_why
                elif peer == "torch-sdpa" and not hasattr(torch.nn.functional,
                                                          "scaled_dot_product_attention"):
                    why = (f"torch {torch.__version__} has no scaled_dot_product_attention "
                           "(PyTorch 2.0 and later; Debian 12 ships 1.13)")
                elif s["ps"] != "fwd" and peer != "torch-math":
                    why = (f"{peer} has no backward here: torch-math's autograd is the peers' "
                           "backward")
                elif peer == "numpy" and s["dtype"] != "fp32":
                    why = (f"numpy computes in fp32 here ({s['dtype']}: no bf16 type, "
                           "no fast fp16)")
                out = ["--csv", a.csv, "--resume"] if a.csv else []
                name = peer + suffix
                if not why:
                    rss0 = rss_reset()
                    if at and at.cuda:
                        torch.cuda.empty_cache()
                        torch.cuda.reset_peak_memory_stats()
                    tracemalloc.start()
                    try:
                        if s["ps"] != "fwd":
                            dout = np.load(os.path.join(tmp, "do.npy")).reshape(
                                q.shape[:-1] + (s["dv"],))
                            fn = make_torch_grad(torch, q, k, v, dout, scale, vis,
                                                 s["ps"] == "fwdbwd", at)
                        elif peer == "numpy":
                            fn = make_numpy(np, q, k, v, scale, vis)
                        else:
                            fn = make_torch(torch, q, k, v, scale, vis, peer == "torch-sdpa", at,
                                            a.scale is not None, g == 1 and s["nq"] == s["nk"])
                        o = fn()
                    except RuntimeError as e:   # torch refusing a type or out of memory
                        why = f"torch {torch.__version__}: " + str(e).strip().split("\n")[0]
                        fn = o = None
                    ws = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                if why:
                    cmd = [a.attnbench, "--peer", name, "--peer-skip", why] + args + out
                else:
                    t0 = time.monotonic()
                    o = tuple(host(x) for x in o) if isinstance(o, tuple) else host(o)
                    download_s = time.monotonic() - t0
                    hwm = rss_read()[0] if rss0 is not None else None
                    opath = os.path.join(tmp, "o.npy")
                    if s["ps"] != "fwd":
                        for grad, x in zip(("dq", "dk", "dv"), o[1:]):
                            if grad == "dq":
                                x = x.reshape(shape_o[:3] + (s["dk"],))
                            np.save(os.path.join(tmp, f"{grad}.npy"),
                                    np.ascontiguousarray(x, dtype=np.float32))
                        o = o[0]
                    np.save(opath, np.ascontiguousarray(o.reshape(shape_o), dtype=np.float32))
                    cmd = [a.attnbench, "--peer", name, "--check-output", opath] + args + out
                    if a.reps > 0:
                        iters, real, cpu, budget = time_runs(fn, a)
                        tpath = os.path.join(tmp, "times")
                        with open(tpath, "w") as f:
                            f.write(f"iterations {iters}\n")
                            f.writelines(f"{x!r} {y!r}\n" for x, y in zip(real, cpu))
                            if budget:
                                f.write("budget_hit 1\n")
                            # tracemalloc sees numpy's buffers, not torch's.
                            if peer == "numpy":
                                f.write(f"workspace_bytes {ws}\n")
                            if hwm is not None:
                                f.write(f"rss_bytes {max(0, hwm - rss0)}\n")
                            if peer != "numpy" and at.cuda:
                                f.write(f"device {at.name()}\n")
                                f.write(f"device_bytes {torch.cuda.max_memory_allocated()}\n")
                                f.write(f"upload_s {fn.upload_s!r}\ndownload_s {download_s!r}\n")
                        cmd += ["--peer-times", tpath]
                r = subprocess.run(cmd, capture_output=True, text=True)
                sys.stdout.write(r.stdout)
                sys.stdout.flush()
                if r.returncode not in (0, 1, 5):
                    die(f"attnbench --peer {name}: {r.stderr.strip()}", r.returncode)
                rc = max(rc, 1 if r.returncode == 1 else 0)
    return rc


if __name__ == "__main__":
    sys.exit(main())
