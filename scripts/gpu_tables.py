"""The tables of results/gpu, as Markdown on stdout, from the one CSV that
scripts/results-gpu wrote: the devices the rows ran on; every backend's
verdicts; the cases a backend of the run has no row for; prefill (per
storage type, d, causal and N) with the median wall time and GFLOP/s of
vulkan, vulkan-3pass and PyTorch's SDPA on the same GPU (torch-sdpa-cuda),
vulkan's device time (timestamp queries), and each of ours over torch's
time; decoding with times and GB/s. Every figure of results/gpu/README.md
is here.

    python3 scripts/gpu_tables.py gpu.csv
"""
import sys

import csvload

BACKENDS = ["vulkan", "vulkan-3pass", "torch-sdpa-cuda"]


def num(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def ms(x):
    return f"{x * 1e3:.3f}" if x < 1e-2 else f"{x * 1e3:.2f}" if x < 1 else f"{x * 1e3:.0f}"


def main():
    if len(sys.argv) != 2:
        csvload.die("gpu_tables.py", "usage: gpu_tables.py GPU.csv")
    rows = csvload.read_csv(sys.argv[1], ["backend", "verdict", "reason", "batch", "heads",
                                          "kv_heads", "seq_q", "seq_kv", "d_k", "causal", "dtype",
                                          "real_median_s", "device_median_s", "gflops", "gbs",
                                          "device"],
                            "gpu_tables.py", "an attnbench CSV", "run scripts/results-gpu")
    if not rows:
        csvload.die("gpu_tables.py", f"{sys.argv[1]}: no rows")
    print("Devices:\n")
    for dev in sorted({(r["backend"], r["device"]) for r in rows if r["device"]}):
        print(f"- {dev[0]}: {dev[1]}")
    print("\nVerdicts:\n")
    for b in sorted({r["backend"] for r in rows}):
        print(f"- {b}: {csvload.tally(r['verdict'] for r in rows if r['backend'] == b)}")
    other = [r for r in rows if r["verdict"] not in ("PASSED", "SKIPPED")]
    for r in other:
        print(f"  - {r['backend']} {r['key']}: {r['verdict']} {r['reason']}")
    skipped = {}
    for r in rows:
        if r["verdict"] == "SKIPPED":
            skipped.setdefault((r["backend"], r["reason"]), []).append(r)
    for (b, why), rs in sorted(skipped.items()):
        print(f"  - {b}: {len(rs)} SKIPPED: {why}")

    # A case some backend of the run has no row for (a run cut short, a
    # command refused): named, so that a "-" in the tables is explained.
    def case_key(r):
        return (r["dtype"], int(r["batch"]), int(r["heads"]), int(r["seq_q"]), int(r["seq_kv"]),
                int(r["d_k"]), r["causal"], int(r["kv_heads"] or r["heads"]))
    ran = {}
    for r in rows:
        ran.setdefault(case_key(r), set()).add(r["backend"])
    present = [b for b in BACKENDS if any(b in v for v in ran.values())]
    missing = [(b, k) for k, v in sorted(ran.items()) for b in present if b not in v]
    print(f"\nCases without a row of each backend of the run: {len(missing)}" +
          ("." if not missing else ":"))
    for b, k in missing:
        print(f"- {b}: {k[0]} B={k[1]} H={k[2]} Hkv={k[7]} N={k[3]} Nk={k[4]} d={k[5]} "
              f"causal={k[6]}")

    cases = {}
    for r in rows:
        if r["verdict"] != "PASSED" or not r["real_median_s"]:
            continue
        cases.setdefault(case_key(r), {})[r["backend"]] = r
    prefill = sorted(k for k in cases if k[3] > 1)
    decode = sorted(k for k in cases if k[3] == 1)

    def cell(c, b, what):
        if b not in c:
            return "-"
        return ms(float(c[b]["real_median_s"])) if what == "t" else num(float(c[b][what]))

    def ratio(c, b):
        if b in c and "torch-sdpa-cuda" in c:
            return (f"{float(c[b]['real_median_s']) / float(c['torch-sdpa-cuda']['real_median_s']):.2f}"
                    "x")
        return "-"

    def dev(c):
        x = c.get("vulkan", {}).get("device_median_s")
        return ms(float(x)) if x else "-"

    print("\nSummary (least to most over the cases of each kind; prefill in GFLOP/s of "
          "the visible pairs, decoding in GB/s):\n")
    print("| backend | dtype | prefill GFLOP/s | prefill time / torch-sdpa-cuda's | "
          "decoding GB/s | decoding time / torch-sdpa-cuda's |")
    print("|---|---|---|---|---|---|")

    def span(xs, fmt):
        return f"{fmt(min(xs))} - {fmt(max(xs))}" if xs else "-"

    for b in BACKENDS:
        for dt in sorted({k[0] for k in cases}, key=lambda t: t != "fp32"):
            def of(keys, what):
                return [float(cases[k][b][what]) for k in keys if k[0] == dt and b in cases[k]]

            def over(keys):
                return [float(cases[k][b]["real_median_s"]) /
                        float(cases[k]["torch-sdpa-cuda"]["real_median_s"])
                        for k in keys if k[0] == dt and b in cases[k] and
                        "torch-sdpa-cuda" in cases[k]]
            pg, dg = of(prefill, "gflops"), of(decode, "gbs")
            if not pg and not dg:
                continue
            rp = over(prefill) if b != "torch-sdpa-cuda" else []
            rd = over(decode) if b != "torch-sdpa-cuda" else []
            print(f"| {b} | {dt} | {span(pg, num)} | {span(rp, lambda x: f'{x:.2f}x')} | "
                  f"{span(dg, num)} | {span(rd, lambda x: f'{x:.2f}x')} |")
    fused = [float(c["vulkan"]["real_median_s"]) / float(c["vulkan-3pass"]["real_median_s"])
             for k, c in cases.items() if k in prefill and "vulkan" in c and "vulkan-3pass" in c]
    if fused:
        print(f"\nvulkan's prefill time over vulkan-3pass's: {span(fused, lambda x: f'{x:.2f}x')}.")
    for b in ("vulkan", "vulkan-3pass"):
        gap = [float(c[b]["real_median_s"]) - float(c[b]["device_median_s"])
               for c in cases.values() if b in c and c[b]["device_median_s"]]
        if gap:
            print(f"{b}'s wall time over its device time (submit and wait): "
                  f"{span(gap, lambda x: f'{x * 1e6:.0f}')} us.")

    noisy = [r for c in cases.values() for r in c.values() if r.get("real_cv") and
             float(r["real_cv"]) > 0.05]
    print(f"\nRows whose repetitions varied by more than 5% (cv): {len(noisy)} of "
          f"{sum(len(c) for c in cases.values())}" + ("." if not noisy else ":"))
    for r in noisy:
        hkv = f" Hkv={r['kv_heads']}" if r["kv_heads"] not in ("", r["heads"]) else ""
        print(f"- {r['backend']} {r['dtype']} B={r['batch']}{hkv} N={r['seq_q']} "
              f"Nk={r['seq_kv']} d={r['d_k']} causal={r['causal']}: "
              f"cv {100 * float(r['real_cv']):.0f}%")

    if prefill:
        print("\nPrefill (B, H, N = Nq = Nk, d): median wall ms, GFLOP/s (visible pairs), and "
              "our time over torch-sdpa-cuda's (below 1: ours faster).\n")
        print("| dtype | B | H | d | causal | N | vulkan ms | vulkan device ms | vulkan GFLOP/s | "
              "vulkan-3pass ms | vulkan-3pass GFLOP/s | torch-sdpa-cuda ms | "
              "torch-sdpa-cuda GFLOP/s | vulkan / torch | vulkan-3pass / torch |")
        print("|---" * 15 + "|")
        for k in sorted(prefill, key=lambda k: (k[0] != "fp32", k[5], k[6], k[1], k[2], k[3])):
            c = cases[k]
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[5]} | {k[6]} | {k[3]} | "
                  f"{cell(c, 'vulkan', 't')} | {dev(c)} | {cell(c, 'vulkan', 'gflops')} | "
                  f"{cell(c, 'vulkan-3pass', 't')} | {cell(c, 'vulkan-3pass', 'gflops')} | "
                  f"{cell(c, 'torch-sdpa-cuda', 't')} | {cell(c, 'torch-sdpa-cuda', 'gflops')} | "
                  f"{ratio(c, 'vulkan')} | {ratio(c, 'vulkan-3pass')} |")
    if decode:
        print("\nDecoding (Nq = 1): median wall ms and GB/s (the least bytes: K, V, Q, O "
              "once), and our time over torch-sdpa-cuda's.\n")
        print("| dtype | B | H | Hkv | d | Nk | vulkan ms | vulkan GB/s | vulkan-3pass ms | "
              "vulkan-3pass GB/s | torch-sdpa-cuda ms | torch-sdpa-cuda GB/s | vulkan / torch | "
              "vulkan-3pass / torch |")
        print("|---" * 14 + "|")
        for k in sorted(decode, key=lambda k: (k[0], -k[7], k[1], k[4])):
            c = cases[k]
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[7]} | {k[5]} | {k[4]} | "
                  f"{cell(c, 'vulkan', 't')} | "
                  f"{cell(c, 'vulkan', 'gbs')} | {cell(c, 'vulkan-3pass', 't')} | "
                  f"{cell(c, 'vulkan-3pass', 'gbs')} | {cell(c, 'torch-sdpa-cuda', 't')} | "
                  f"{cell(c, 'torch-sdpa-cuda', 'gbs')} | {ratio(c, 'vulkan')} | "
                  f"{ratio(c, 'vulkan-3pass')} |")


if __name__ == "__main__":
    main()
