#!/usr/bin/env python3
"""The tables of results/gpu/decode-ab (ab.md), from the CSVs ../gpu.sh wrote:
   ab.py DIR > DIR/ab.md
1. Decoding with `vulkan` before decode.comp (old-1.csv, old-2.csv: flash.comp
   for every Nq) and with it (new-1.csv, new-2.csv), two rounds alternating
   old and new: device median ms per round, and new over old (medians of the
   rounds).
2. decode.comp with --splits forced (splits.csv) beside the backend's own
   chunk count (new-*.csv)."""
import csv
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def key(r):
    return (r['dtype'], int(r['batch']), int(r['heads']), int(r['kv_heads']), int(r['seq_kv']),
            int(r['d_k']))


def load(name):
    rows = {}
    f = os.path.join(out, name + '.csv')
    if os.path.exists(f):
        for r in csv.DictReader(open(f)):
            if r['backend'] == 'vulkan':
                rows.setdefault(key(r), []).append(r)
    return rows


def ms(r):
    return float(r['device_median_s']) * 1e3


def gbs(r):  # the least bytes (K, V, Q, O once) over the device time
    return float(r['bytes']) / float(r['device_median_s']) * 1e-9


runs = {f'{b}-{i}': load(f'{b}-{i}') for b in ('old', 'new') for i in (1, 2)}
keys = sorted({k for rows in runs.values() for k in rows})
verdicts = [r['verdict'] for rows in runs.values() for rs in rows.values() for r in rs]
print('## 1. decode.comp against flash.comp\n')
print('`vulkan`, Nq = 1, device median ms of each run (old: flash.comp; new: decode.comp), '
      'rounds in the order they ran; new / old is the ratio of the two rounds\' medians. '
      '%d rows, %s.\n' % (len(verdicts), ', '.join('%d %s' % (verdicts.count(v), v)
                                                     for v in sorted(set(verdicts)))))
print('| dtype | B | H | Hkv | Nk | d | old 1 | new 1 | old 2 | new 2 | new / old '
      '| new GB/s (device) |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|')
ratios = []
for k in keys:
    cell = {n: runs[n][k][0] for n in runs if k in runs[n]}
    old = [ms(cell[n]) for n in ('old-1', 'old-2') if n in cell]
    new = [ms(cell[n]) for n in ('new-1', 'new-2') if n in cell]
    ratio = statistics.median(new) / statistics.median(old) if old and new else None
    if ratio:
        ratios.append(ratio)
    print('| %s | %d | %d | %d | %d | %d | ' % k
          + ' | '.join('%.3f' % ms(cell[n]) if n in cell else '-'
                       for n in ('old-1', 'new-1', 'old-2', 'new-2'))
          + ' | %s | %s |' % ('%.2f' % ratio if ratio else '-',
                              '%.0f' % statistics.median(gbs(cell[n]) for n in ('new-1', 'new-2')
                                                         if n in cell) if new else '-'))
if ratios:
    print('\nnew / old: %.2f - %.2f over %d cases.' % (min(ratios), max(ratios), len(ratios)))

print('\n## 2. decode.comp\'s split-KV chunks\n')
print('Device median ms with `--splits` forced (splits.csv), and with the backend\'s own '
      'choice (new-1.csv, new-2.csv: the median of the rounds; the chunk count it '
      'chose is in README.md).\n')
sp = {}
for r in csv.DictReader(open(os.path.join(out, 'splits.csv'))):
    sp.setdefault(key(r), {})[int(r['splits'])] = r
counts = sorted({s for v in sp.values() for s in v})
print('| dtype | B | H | Hkv | Nk | d | ' + ' | '.join('%d' % s for s in counts) + ' | own |')
print('|---|---|---|---|---|---|' + '---|' * (len(counts) + 1))
for k in sorted(sp):
    own = [ms(runs[n][k][0]) for n in ('new-1', 'new-2') if k in runs[n]]
    print('| %s | %d | %d | %d | %d | %d | ' % k
          + ' | '.join('%.3f' % ms(sp[k][s]) if s in sp[k] else '-' for s in counts)
          + ' | %s |' % ('%.3f' % statistics.median(own) if own else '-'))
