#!/usr/bin/env python3
"""The tables of results/gpu/coopmat-ab (ab.md, words/ab.md), from the CSVs
cm.sh (cm2.sh) wrote:
   ab.py DIR [OLD NEW] > DIR/ab.md
fp16 prefill with `vulkan` in two builds (old-1.csv, old-2.csv; new-1.csv,
new-2.csv), two rounds alternating old and new: device median ms per round
and new over old (medians of the rounds); the new build's device GFLOP/s;
where DIR has torch.csv (torch-sdpa-cuda on the same shapes in the same
call), the new build's wall time beside torch's and their ratio. OLD and
NEW name the builds' kernels (flash.comp and flash_cm.comp)."""
import csv
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def key(r):
    return (r['dtype'], int(r['batch']), int(r['heads']), int(r['kv_heads']), int(r['d_k']),
            int(r['causal']), int(r['seq_q']))


def load(name):
    rows = {}
    for r in csv.DictReader(open(os.path.join(out, name + '.csv'))):
        rows[key(r)] = r
    return rows


def med(rows, field):
    v = [float(r[field]) for r in rows if r.get(field)]
    return statistics.median(v) if v else None


names = sys.argv[2:4] if len(sys.argv) > 3 else ['flash.comp', 'flash_cm.comp']
runs = {n: load(n) for n in ('old-1', 'new-1', 'old-2', 'new-2', 'torch')
        if os.path.exists(os.path.join(out, n + '.csv'))}
keys = sorted({k for n, rows in runs.items() if n != 'torch' for k in rows})
verdicts = [r['verdict'] for rows in runs.values() for r in rows.values()]
torch = 'torch' in runs
print('fp16 prefill, Nq = Nk = N, device median ms of each run (old: %s; new: %s), '
      'rounds in the order they ran; new / old is the ratio of the two rounds\' medians; '
      'new GFLOP/s over the visible pairs at the device median' % tuple(names)
      + ('; wall ms of the new build and of torch-sdpa-cuda, and their ratio (below 1: ours '
         'faster)' if torch else '')
      + '. %d rows, %s.\n' % (len(verdicts), ', '.join('%d %s' % (verdicts.count(v), v)
                                                      for v in sorted(set(verdicts)))))
print('| B | H | Hkv | d | causal | N | old 1 | new 1 | old 2 | new 2 | new / old '
      '| new GFLOP/s (device) |'
      + (' new wall ms | torch wall ms | new / torch (wall) |' if torch else ''))
print('|---|---|---|---|---|---|---|---|---|---|---|---|' + ('---|---|---|' if torch else ''))
ratios, vt = [], []
for k in keys:
    cell = {n: runs[n][k] for n in runs if k in runs[n]}
    old = med([cell[n] for n in ('old-1', 'old-2') if n in cell], 'device_median_s')
    new = [cell[n] for n in ('new-1', 'new-2') if n in cell]
    dnew = med(new, 'device_median_s')
    ratio = dnew / old if old and dnew else None
    if ratio:
        ratios.append(ratio)
    gf = float(new[0]['flops']) / dnew * 1e-9 if new and dnew else None
    wall = med(new, 'real_median_s')
    tw = float(cell['torch']['real_median_s']) if 'torch' in cell else None
    if wall and tw:
        vt.append(wall / tw)
    f = lambda x, s='%.3f': s % x if x is not None else '-'
    print('| %d | %d | %d | %d | %d | %d | ' % k[1:]
          + ' | '.join(f(float(cell[n]['device_median_s']) * 1e3 if n in cell else None)
                       for n in ('old-1', 'new-1', 'old-2', 'new-2'))
          + ' | %s | %s |' % (f(ratio, '%.2f'), f(gf, '%.0f'))
          + (' %s | %s | %s |' % (f(wall and wall * 1e3), f(tw and tw * 1e3),
                                  f(wall / tw if wall and tw else None, '%.2f'))
             if torch else ''))
if ratios:
    print('\nnew / old (device): %.2f - %.2f over %d cases' % (min(ratios), max(ratios),
                                                             len(ratios))
          + ('; new / torch (wall): %.2f - %.2f over %d' % (min(vt), max(vt), len(vt))
             if vt else '') + '.')
