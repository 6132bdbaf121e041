"""The output of tests/bench/compare.py: results.json (every run's figures and the settings),
results.md (a table of medians with their range, and the targets of issue 8 with the ratios that
decide them) and chart.png (the headline figures, one panel each).

    python3 report.py OUT_DIR     rebuilds results.md and chart.png from OUT_DIR/results.json
"""
import json
import os
import statistics
import sys

SYSTEMS = ('tierfs', 'ceph-fuse', 's3fs', 'rclone', 'passthrough', 'ext4', 'rados bench')
PEERS = ('ceph-fuse', 's3fs', 'rclone')
PANELS = (
    ('loader cold files/s', 'DataLoader epoch 1, cold (files/s)'),
    ('loader warm, page cache dropped files/s', 'DataLoader, disk cache warm,\npage cache dropped (files/s)'),
    ('python loader warm, page cache dropped files/s', 'Python DataLoader, disk cache warm\n(files/s)'),
    ('over epoch 2 hit ratio', 'dataset 1.5x cache: epoch-2 hit ratio'),
    ('shards cold MiB/s', 'shards, cold, 4 readers (MiB/s)'),
    ('checkpoint write until in Ceph MiB/s', 'checkpoint write until in Ceph (MiB/s)'),
    ('walk cold entries/s', 'stat walk, cold (entries/s)'),
    ('daemon peak RSS MiB', 'daemon peak RSS (MiB, lower is better)'),
)


def median(values, metric):
    if not values:
        return None
    return max(values) if 'RSS' in metric else statistics.median(values)


def cell(values, metric):
    mid = median(values, metric)
    if mid is None:
        return ''
    fmt = '.2f' if mid < 10 else '.0f'
    if 'RSS' in metric or 'wrong' in metric or len(values) == 1:
        return f'{mid:{fmt}}' if 'wrong' not in metric else f'{sum(values):.0f}'
    return f'{mid:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})'


def get(results, system, metric):
    return median(results.get(system, {}).get(metric, []), metric)


def targets(results, config, over_ratio):
    """(what, tierfs's figure, the yardstick, ratio, target) per target of issue 8."""
    out = []

    def ratio(label, num, den, target, higher_is_better=True):
        if num is None or den is None or den == 0:
            out.append((label, num, den, None, target))
            return
        out.append((label, num, den, num / den if higher_is_better else den / num, target))

    t = lambda m: get(results, 'tierfs', m)  # noqa: E731
    best = lambda m: max((get(results, p, m) or 0 for p in PEERS), default=0) or None  # noqa
    ratio('warm DataLoader epoch (page cache dropped) / passthrough',
          t('loader warm, page cache dropped files/s'),
          get(results, 'passthrough', 'loader warm, page cache dropped files/s'), 0.9)
    ratio('warm DataLoader epoch (page cache dropped) / best peer',
          t('loader warm, page cache dropped files/s'),
          best('loader warm, page cache dropped files/s'), None)
    ratio('cold DataLoader epoch / rados bench 128 KiB objects/s', t('loader cold files/s'),
          get(results, 'rados bench', 'loader cold files/s'), 0.7)
    ratio('cold DataLoader epoch / ceph-fuse', t('loader cold files/s'),
          get(results, 'ceph-fuse', 'loader cold files/s'), None)
    ratio('dataset 1.5x cache: epoch-2 hit ratio / (cache / dataset)',
          t('over epoch 2 hit ratio'), over_ratio, 0.9)
    ratio('shards cold / rados bench 4 MiB reads', t('shards cold MiB/s'),
          get(results, 'rados bench', 'shards cold MiB/s'), 0.8)
    ratio('checkpoint until in Ceph / rados bench 4 MiB writes',
          t('checkpoint write until in Ceph MiB/s'),
          get(results, 'rados bench', 'checkpoint write until in Ceph MiB/s'), 0.8)
    ratio('cold stat walk / ceph-fuse', t('walk cold entries/s'),
          get(results, 'ceph-fuse', 'walk cold entries/s'), 10)
    lowest_peer = min((get(results, p, 'daemon peak RSS MiB') or float('inf') for p in PEERS),
                      default=float('inf'))
    ratio('daemon RSS: lowest peer / tierfs', t('daemon peak RSS MiB'),
          None if lowest_peer == float('inf') else lowest_peer, 1, higher_is_better=False)
    return out


def markdown(results, config, over_ratio):
    names = [s for s in SYSTEMS if s in results]
    lines = [f'Settings: {json.dumps(config)}', '',
             '| metric (median of rounds, range) | ' + ' | '.join(names) + ' |',
             '|---|' + '---|' * len(names)]
    metrics = list(dict.fromkeys(m for n in names for m in results[n]))
    for m in metrics:
        lines.append(f'| {m} | ' + ' | '.join(cell(results[n].get(m, []), m) for n in names)
                     + ' |')
    lines += ['', f'Cache / dataset of the 1.5x workload: {over_ratio:.3f}', '',
              '| target (issue 8) | tierfs | yardstick | ratio | target | met |',
              '|---|---|---|---|---|---|']
    for label, num, den, r, target in targets(results, config, over_ratio):
        fmt = lambda v: '' if v is None else (f'{v:.3f}' if v < 10 else f'{v:.0f}')  # noqa
        met = '' if r is None or target is None else ('yes' if r >= target else 'NO')
        lines.append(f'| {label} | {fmt(num)} | {fmt(den)} | {fmt(r)} | '
                     f'{"" if target is None else target} | {met} |')
    return '\n'.join(lines) + '\n'


def chart(results, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 4, figsize=(20, 9))
    colors = {'tierfs': '#d62728', 'ceph-fuse': '#1f77b4', 's3fs': '#ff7f0e',
              'rclone': '#9467bd', 'passthrough': '#7f7f7f', 'ext4': '#bcbd22',
              'rados bench': '#2ca02c'}
    for ax, (metric, title) in zip(axes.flat, PANELS):
        names = [s for s in SYSTEMS if results.get(s, {}).get(metric)]
        vals = [results[s][metric] for s in names]
        mids = [median(v, metric) for v in vals]
        # The range of the rounds (none for RSS, whose figure is the peak of every run).
        err = [[0 if 'RSS' in metric else m - min(v) for m, v in zip(mids, vals)],
               [0 if 'RSS' in metric else max(v) - m for m, v in zip(mids, vals)]]
        ax.bar(names, mids, yerr=err, color=[colors[n] for n in names], capsize=3)
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis='x', labelrotation=45, labelsize=8)
        for i, m in enumerate(mids):
            ax.annotate(f'{m:.2f}' if m < 10 else f'{m:.0f}', (i, m), ha='center',
                        va='bottom', fontsize=7)
    fig.suptitle('tierfs and its peers on one local Ceph cluster (tests/bench/compare.sh)')
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def over_ratio_of(config, data):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dataset
    import fs_compare as fc
    return fc.size_arg(config['over_cache']) / dataset.manifest_bytes(data, 'over')


def write(out, results, config, data):
    os.makedirs(out, exist_ok=True)
    config = dict(config, data=data, over_ratio=over_ratio_of(config, data))
    with open(os.path.join(out, 'results.json'), 'w') as f:
        json.dump({'config': config, 'results': results}, f, indent=1)
    render(out)


def render(out):
    with open(os.path.join(out, 'results.json')) as f:
        saved = json.load(f)
    results, config = saved['results'], saved['config']
    text = markdown(results, config, config['over_ratio'])
    with open(os.path.join(out, 'results.md'), 'w') as f:
        f.write(text)
    chart(results, os.path.join(out, 'chart.png'))
    print(text)


if __name__ == '__main__':
    render(sys.argv[1])
