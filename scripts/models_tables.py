"""The tables of results/models from its CSVs and peak logs, as Markdown on
stdout: the presets as they ran, tiled's prefill and decode per preset,
tiled against the other backends where they ran and why the others did not,
and the modifiers' targets (the window's rate, the softcap, ALiBi and sinks'
cost, the latent decode's share of the peak, the decode roofline). Every
figure of results/models/README.md is here; all numbers of one table come
from one run.

    python3 scripts/models_tables.py results/models
"""
import glob
import os
import statistics
import sys

import csvload
from decode_tables import peaks

PROG = "models_tables.py"
NEED = ["backend", "verdict", "reason", "model", "heads", "kv_heads", "seq_q", "seq_kv", "d_k",
        "d_v", "causal", "window_left", "window_right", "softcap", "alibi", "sinks", "v_from_k",
        "real_median_s", "gflops", "pct_peak", "gbs", "pct_roofline", "bound"]


def load(path, passed=True):
    rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV of schema 8 or later",
                            "run scripts/results-models")
    bad = [r for r in rows if r["verdict"] not in ("PASSED", "SKIPPED")]
    for r in bad:
        print(f"{PROG}: {path}: {r['backend']} {r['model']}: {r['verdict']} {r['reason']}",
              file=sys.stderr)
    if not passed:
        return rows
    return [r for r in rows if r["verdict"] == "PASSED" and r["real_median_s"]]


def label(n):
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def ms(r):
    return float(r["real_median_s"]) * 1e3


def opt(r, col, fmt):
    """r[col] in fmt, or "-" where the run had no peak (attnbench --peak)."""
    return fmt.format(float(r[col])) if r[col] else "-"


def mods(r):
    out = []
    if r["window_left"]:
        out.append(f"window {r['window_left']},{r['window_right']}")
    if r["softcap"] and float(r["softcap"]) > 0:
        out.append(f"softcap {float(r['softcap']):g}")
    for col, name in (("alibi", "ALiBi"), ("sinks", "sinks"), ("v_from_k", "V from K")):
        if r[col] == "1":
            out.append(name)
    return ", ".join(out) or "-"


def grid(rows, backend, x):
    """{model: {x: row}} of backend's rows."""
    out = {}
    for r in rows:
        if r["backend"] == backend and r["model"]:
            out.setdefault(r["model"], {})[int(r[x])] = r
    return out


def in_order(rows):
    seen = []
    for r in rows:
        if r["model"] and r["model"] not in seen:
            seen.append(r["model"])
    return seen


def presets(pre, dec):
    print("\n### The presets as they ran (`attnbench --model list` has each field's source)\n")
    print("| model | H | Hkv | dk | dv | causal | modifiers |")
    print("|---|---|---|---|---|---|---|")
    first = {}
    for r in pre + dec:
        first.setdefault(r["model"], r)
    for m in in_order(pre + dec):
        r = first[m]
        print(f"| {m} | {r['heads']} | {r['kv_heads']} | {r['d_k']} | {r['d_v']} | "
              f"{'yes' if r['causal'] == '1' else 'no'} | {mods(r)} |")


def table(rows, have, xs, xname, cell, bound=False):
    """A row per preset of have ({model: {x: row}}), a column per x: cell(m,
    x) where have[m] has x, else "-"; bound: a column of the rows' bounds."""
    print("| model | " + ("bound | " if bound else "") +
          " | ".join(f"{xname} = {label(n)}" for n in xs) + " |")
    print("|---|" + ("---|" if bound else "") + "---|" * len(xs))
    for m in in_order(rows):
        if m in have:
            b = "/".join(sorted({r["bound"] or "-" for r in have[m].values()})) + " | " \
                if bound else ""
            print(f"| {m} | {b}" + " | ".join(cell(m, n) if n in have[m] else "-"
                                               for n in xs) + " |")


def prefill(rows):
    t = grid(rows, "tiled", "seq_q")
    ns = sorted({n for m in t.values() for n in m})
    print("\n### Prefill: tiled's GFLOP/s (over the visible pairs) and % of the bf16 peak\n")
    table(rows, t, ns, "N",
          lambda m, n: f"{float(t[m][n]['gflops']):.0f} ({opt(t[m][n], 'pct_peak', '{:.0f}%')})")
    others = [b for b in ("onednn", "naive") if any(r["backend"] == b for r in rows)]
    for b in others:
        o = grid(rows, b, "seq_q")
        both = {m: {n: r for n, r in o[m].items() if n in t.get(m, {})} for m in o}
        common = sorted({n for m in both for n in both[m]})
        if not common:
            continue
        print(f"\ntiled against {b}: {b}'s time over tiled's (tiled is that many times faster)\n")
        table(rows, both, common, "N", lambda m, n: f"{ms(o[m][n]) / ms(t[m][n]):.1f}x")


def decode(rows):
    t = grid(rows, "tiled", "seq_kv")
    ns = sorted({n for m in t.values() for n in m})
    print("\n### Decoding (B = 1, Nq = 1): tiled's % of the roofline\n")
    table(rows, t, ns, "Nk", lambda m, n: opt(t[m][n], "pct_roofline", "{:.0f}%"), bound=True)
    print("\nAt Nk = 32K: time, GB/s (least bytes over time) and % of the roofline\n")
    print("| model | tiled | onednn | naive |")
    print("|---|---|---|---|")
    for m in in_order(rows):
        cells = []
        for b in ("tiled", "onednn", "naive"):
            r = grid(rows, b, "seq_kv").get(m, {}).get(32768)
            cells.append(f"{ms(r):.2f} ms, {float(r['gbs']):.1f} GB/s, "
                         f"{opt(r, 'pct_roofline', '{:.0f}%')}" if r else "-")
        print(f"| {m} | " + " | ".join(cells) + " |")


def skipped(named):
    print("\n### What did not run, and why (the SKIPPED rows' reasons)\n")
    print("| phase | backend | reason | cases |")
    print("|---|---|---|---|")
    for phase, rows in named:
        count = {}
        for r in rows:
            if r["verdict"] == "SKIPPED":
                k = (r["backend"], r["reason"])
                count[k] = count.get(k, 0) + 1
        for (b, why), n in sorted(count.items()):
            print(f"| {phase} | {b} | {why} | {n} |")


def targets(d, dec):
    rounds = [load(p) for p in sorted(glob.glob(os.path.join(d, "targets-*.csv")))]
    print(f"\n### The targets ({len(rounds)} rounds, each setting its own process, interleaved)\n")
    print("| target | per round | median | verdict |")
    print("|---|---|---|---|")

    def pick(rows, n, **want):
        for r in rows:
            if int(r["seq_q"]) == n and all(r[k] == v for k, v in want.items()):
                return r
        return None

    win = []
    for rs in rounds:
        w = pick(rs, 32768, window_left="4096")
        f = pick(rs, 32768, window_left="")
        if w and f:
            win.append(float(w["gflops"]) / float(f["gflops"]))
    if win:
        med = statistics.median(win)
        print(f"| window 4096, N = 32K, causal, H 4, d 128: GFLOP/s over full causal's, >= 90% | "
              + ", ".join(f"{x * 100:.1f}%" for x in win) + f" | {med * 100:.1f}% | "
              f"{'met' if med >= 0.9 else 'not met'} |")
    plain = dict(softcap="", alibi="0", sinks="0")
    for name, want, limit in (("softcap 50", dict(plain, softcap="50"), 1.20),
                              ("ALiBi", dict(plain, alibi="1"), 1.05),
                              ("sinks", dict(plain, sinks="1"), 1.02)):
        cost = []
        for rs in rounds:
            m, p = pick(rs, 4096, **want), pick(rs, 4096, **plain)
            if m and p:
                cost.append(ms(m) / ms(p))
        if cost:
            med = statistics.median(cost)
            print(f"| {name}, N = 4096, causal, H 8, d 128: time over plain, <= "
                  f"{limit:.2f} | " + ", ".join(f"{x:.3f}" for x in cost) + f" | {med:.3f} | "
                  f"{'met' if med <= limit else 'not met'} |")
    t = grid(dec, "tiled", "seq_kv")
    r = t.get("deepseek-v3-decode", {}).get(32768)
    if r and r["pct_roofline"]:
        p = float(r["pct_roofline"])
        print(f"| deepseek-v3-decode, Nk = 32K: % of the bf16 dot-product peak "
              f"({r['bound']}-bound), >= 60% | - | {p:.0f}% | {'met' if p >= 60 else 'not met'} |")
    for m in in_order(dec):
        s = [float(x["pct_roofline"]) for n, x in t.get(m, {}).items()
             if n >= 16384 and x["bound"] == "memory" and x["pct_roofline"]]
        if s:
            print(f"| {m}, Nk >= 16K: % of the roofline (memory-bound), >= 80% | "
                  + ", ".join(f"{x:.0f}%" for x in s) + f" | {statistics.median(s):.0f}% | "
                  f"{'met' if min(s) >= 80 else 'not met'} |")


def main():
    if len(sys.argv) != 2:
        csvload.die(PROG, "usage: models_tables.py RESULTS_DIR")
    d = sys.argv[1]
    peaks(d)
    pre_all = load(os.path.join(d, "prefill.csv"), passed=False)
    dec_all = load(os.path.join(d, "decode.csv"), passed=False)
    pre = [r for r in pre_all if r["verdict"] == "PASSED" and r["real_median_s"]]
    dec = [r for r in dec_all if r["verdict"] == "PASSED" and r["real_median_s"]]
    presets(pre, dec)
    prefill(pre)
    decode(dec)
    skipped((("prefill", pre_all), ("decode", dec_all)))
    targets(d, dec)


if __name__ == "__main__":
    main()
