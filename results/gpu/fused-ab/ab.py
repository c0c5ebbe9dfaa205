#!/usr/bin/env python3
"""The tables of results/gpu/fused-ab (ab.md), from the CSVs gpu2.sh wrote:
   ab.py DIR > DIR/ab.md
1. ab.sh's cases: the fused kernel before (old.csv, commit 46ed284) and after
   at 64, 128 and 256 invocations per workgroup (wg64.csv, wg128.csv,
   wg256.csv), device median ms; the winner by the geometric mean of the
   prefill cases (how gpu2.sh chose which build to run next).
2. The rule committed (256 invocations for blocks of 32 rows, 128 for
   fewer): each case's time over the old kernel's and over vulkan-3pass's
   in the same run (full-new.csv).
3. scripts/results-gpu's shapes as far as the run got: the old kernel
   (full-old.csv) beside the new one at 64 invocations and vulkan-3pass
   (full-new.csv)."""
import csv
import math
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def load(name):
    f = os.path.join(out, name + '.csv')
    rows = {}
    if os.path.exists(f):
        for r in csv.DictReader(open(f)):
            k = (r['backend'], r['dtype'], int(r['batch']), int(r['heads']), int(r['seq_q']),
                 int(r['seq_kv']), int(r['d_k']), int(r['causal']))
            rows[k] = r
    return rows


def ms(r):
    v = r['device_median_s'] or r['real_median_s']
    return float(v) * 1e3


def mark(r):
    return '' if r['verdict'] == 'PASSED' else ' (%s)' % r['verdict']


def shape(k):
    return '| %s | %d | %d | %d | %d | %d | %d |' % k[1:]


builds = ['old', 'wg64', 'wg128', 'wg256']
data = {b: load(b) for b in builds}
keys = sorted({k for b in builds for k in data[b] if k[0] == 'vulkan'},
              key=lambda k: (k[4] == 1, k))
print('## 1. Invocations per workgroup (ab.sh)\n')
print('Device median ms of `vulkan`; `-`: the run ended (its 120 s limit) before the case.\n')
print('| dtype | B | H | Nq | Nk | d | causal | old | 64 | 128 | 256 |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
logs = {b: [] for b in builds[1:]}
for k in keys:
    cells = ['%.3f%s' % (ms(data[b][k]), mark(data[b][k])) if k in data[b] else '-'
             for b in builds]
    print(shape(k) + ' ' + ' | '.join(cells) + ' |')
    if k[4] > 1:
        for b in builds[1:]:
            if k in data[b]:
                logs[b].append(math.log(ms(data[b][k])))
print()
n_pre = sum(1 for k in keys if k[4] > 1)
for b in builds[1:]:
    if len(logs[b]) == n_pre:
        print('- prefill geometric mean, %s invocations: %.3f ms'
              % (b[2:], math.exp(sum(logs[b]) / n_pre)))

new, old = load('full-new'), load('full-old')
print('\n## 2. The rule committed: 256 invocations for blocks of 32 rows, 128 for fewer\n')
print('Its time over the old kernel\'s (ab.sh, same run) and over `vulkan-3pass`\'s '
      '(full-new.csv, same run); device median ms.\n')
print('| dtype | B | H | Nq | Nk | d | causal | new ms | old ms | new / old | vulkan-3pass ms '
      '| new / vulkan-3pass | new GFLOP/s or GB/s |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for k in keys:
    b = 'wg256' if k[4] > 1 else 'wg128'
    if k not in data[b]:
        continue
    r = data[b][k]
    o = data['old'].get(k)
    t = new.get(('vulkan-3pass',) + k[1:])
    rate = r['gflops'] if k[4] > 1 else r['gbs']
    print(shape(k) + ' %.3f%s | %s | %s | %s | %s | %.0f |' % (
        ms(r), mark(r), '%.3f' % ms(o) if o else '-', '%.2fx' % (ms(r) / ms(o)) if o else '-',
        '%.3f' % ms(t) if t else '-', '%.2fx' % (ms(r) / ms(t)) if t else '-', float(rate)))

print('\n## 3. scripts/results-gpu\'s shapes, as far as the run got (gpu2.sh)\n')
print('The old kernel, the new one at 64 invocations (before the rule above) and '
      '`vulkan-3pass` (its dispatches timed together); device median ms; `-`: not run '
      '(the call\'s time ran out during the new kernel\'s decoding cases).\n')
print('| dtype | B | H | Nq | Nk | d | causal | old | new, 64 | new, 64 / old | vulkan-3pass |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for k in sorted((k for k in new if k[0] == 'vulkan'), key=lambda k: (k[4] == 1, k)):
    o = old.get(k)
    t = new.get(('vulkan-3pass',) + k[1:])
    print(shape(k) + ' %s | %.3f%s | %s | %s |' % (
        '%.3f%s' % (ms(o), mark(o)) if o else '-', ms(new[k]), mark(new[k]),
        '%.2fx' % (ms(new[k]) / ms(o)) if o else '-', '%.3f%s' % (ms(t), mark(t)) if t else '-'))
verdicts = {}
for rows in [new, old] + [data[b] for b in builds]:
    for r in rows.values():
        verdicts[r['verdict']] = verdicts.get(r['verdict'], 0) + 1
print('\nVerdicts over every row of the CSVs: ' +
      ', '.join('%d %s' % (n, v) for v, n in sorted(verdicts.items())) + '.')
