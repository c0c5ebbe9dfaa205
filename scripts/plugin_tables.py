"""The table of results/plugin from its CSVs, as Markdown on stdout: each
backend built in against the same code built as a plugin, the median time
of each over the rounds, and the median of the rounds' time ratios (plugin
over built-in, the two timed in the same process), against the band
0.97-1.03.

    python3 scripts/plugin_tables.py results/plugin
"""
import glob
import os
import statistics
import sys

import csvload

PROG = "plugin_tables.py"
NEED = ["backend", "verdict", "reason", "real_median_s", "key"]
BAND = (0.97, 1.03)
CASES = [("prefill", "tiled", "B=1 H=8 N=2048 d=64 causal, fp32"),
         ("decode", "tiled", "Llama-3.1-8B, B=1 Nq=1 Nk=16K, bf16"),
         ("naive", "naive", "B=1 H=4 N=512 d=64, fp32")]


def main():
    if len(sys.argv) != 2:
        csvload.die(PROG, "usage: plugin_tables.py RESULTS_DIR")
    d = sys.argv[1]
    print("# results/plugin: the table\n")
    print(f"Written by `scripts/{PROG}` from this folder's CSVs.\n")
    print("| case | backend | built in | as a plugin | plugin / built in (median of rounds) "
          "| each round | within 0.97-1.03 |")
    print("|---|---|---|---|---|---|---|")
    for name, be, what in CASES:
        builtin, plugin, ratios = [], [], []
        for path in sorted(glob.glob(os.path.join(d, f"{name}-*.csv"))):
            rows = csvload.read_csv(path, NEED, PROG, "an attnbench CSV",
                                    "run scripts/results-plugin")
            t = {}
            for r in rows:
                if r["verdict"] != "PASSED":
                    csvload.die(PROG, f"{path}: {r['backend']} {r['verdict']} {r['reason']}")
                t[r["backend"]] = float(r["real_median_s"])
            if be in t and "asplugin." + be in t:
                builtin.append(t[be])
                plugin.append(t["asplugin." + be])
                ratios.append(t["asplugin." + be] / t[be])
        if not ratios:
            csvload.die(PROG, f"{d}: no round of {name} with both {be} and asplugin.{be}")
        r = statistics.median(ratios)
        ms = lambda xs: f"{statistics.median(xs) * 1e3:.3f} ms"
        each = " ".join(f"{x:.3f}" for x in ratios)
        print(f"| {what} | {be} | {ms(builtin)} | {ms(plugin)} | {r:.3f} | {each} | "
              f"{'yes' if BAND[0] <= r <= BAND[1] else 'no'} |")
    print()
    print("Each round is one process per case running both, their order alternating by "
          "round; a ratio is the plugin's median over the built-in's of the same process. "
          "The time columns are medians over the rounds of each alone, so they carry the "
          "rounds' differences (decoding moves with the memory bandwidth the machine "
          "gives), which the ratios do not.")


if __name__ == "__main__":
    main()
