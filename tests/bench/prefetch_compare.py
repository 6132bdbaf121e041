#!/usr/bin/env python3
"""Prefetching against none on the first (cold) epoch (issue 5): figures, not asserts.

A tree of small files (ImageFolder-like: class directories of 1,000 files) in the local cluster
is read once in a shuffled order by parallel readers through a fresh tierfs mount with an empty
cache device, in three ways taking turns within each round:

  none    no prefetch: `[prefetch] sweep = false`, no hint;
  sweep   the dataset sweep (on by default): the daemon notices the random order and fetches the
          rest of the tree in the background;
  hint    `tierfs hint` given the epoch's order before it starts (the sweep off).

Each with no injected latency and with --latency (default 2 ms) added to every back-end read (a
[[fault]] delay: a network farther than loopback). Large-file streaming against `rados bench` is
tests/bench/fs_compare.py's.

Usage: tests/bench/prefetch_compare.py [--files 10000] [--file-size 110K] [--readers 8]
         [--rounds 2] [--latency 2ms] [--distance 256] [--memstore] [--build build]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, HERE)
import fs_compare as fc  # noqa: E402
import fs_workloads as wl  # noqa: E402

log = fc.log
MODES = ('none', 'sweep', 'hint')


def config(env, ns, work, sweep, latency):
    text = f"""[backend]
type = "rados"
[backend.rados]
conf = "{env['TIERFS_CEPH_CONF']}"
keyring = "{env['TIERFS_CEPH_KEYRING']}"
user = "{env['TIERFS_CEPH_USER']}"
pool = "{env['TIERFS_CEPH_POOL']}"
namespace = "{ns}"
[cache]
[[cache.device]]
path = "{work}/cache0"
size = "4G"
[prefetch]
sweep = {'true' if sweep else 'false'}
[control]
socket = "{work}/ctl.sock"
"""
    if latency:
        text += f'[[fault]]\nop = "read"\nobject_prefix = "c."\naction = "delay"\n' \
                f'delay = "{latency}"\n'
    path = os.path.join(work, 'tierfs.toml')
    open(path, 'w').write(text)
    return path


def cold_epoch(binary, env, ns, work, mode, latency, args, seed):
    """One epoch through a fresh mount over an empty cache device; its figures."""
    for leftover in ('cache0', 'cache0.index'):
        shutil.rmtree(os.path.join(work, leftover), ignore_errors=True)
        if os.path.exists(os.path.join(work, leftover)):
            os.remove(os.path.join(work, leftover))
    mnt = os.path.join(work, 'mnt')
    cfg = config(env, ns, work, mode == 'sweep', latency)
    proc = fc.mount_with_config(binary, cfg, mnt)
    hint = None
    try:
        root = os.path.join(mnt, 'small')
        fc.drop_caches()
        if mode == 'hint':
            files = wl.list_files(root)
            import random
            random.Random(seed).shuffle(files)
            order = os.path.join(work, 'order')
            open(order, 'w').write(''.join(f + '\n' for f in files))
            hint = subprocess.Popen([binary, 'hint', '--distance', str(args.distance), '--from',
                                     order, mnt], stdout=subprocess.DEVNULL)
        r = wl.small_epoch(root, args.readers, seed=seed)
        return r
    finally:
        if hint:
            hint.terminate()
            hint.wait()
        subprocess.run(['fusermount3', '-u', mnt])
        proc.wait(timeout=600)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--files', type=int, default=10000)
    p.add_argument('--file-size', type=fc.size_arg, default=110 << 10)
    p.add_argument('--readers', type=int, default=8)
    p.add_argument('--rounds', type=int, default=2)
    p.add_argument('--latency', default='2ms')
    p.add_argument('--distance', type=int, default=256)
    p.add_argument('--memstore', action='store_true', help='memstore OSD (default: BlueStore)')
    p.add_argument('--osd-size', default='20G')
    p.add_argument('--build', default=os.path.join(ROOT, 'build'))
    args = p.parse_args()
    binary = os.path.join(args.build, 'tools', 'tierfs')
    if not os.path.exists(binary):
        sys.exit(f'{binary} is missing: ninja -C {args.build}')
    data = f'/tmp/tierfs-bench-data-{args.files}-{args.file_size}-0'
    fc.make_dataset(data, args.files, args.file_size, 0, 0)
    work = tempfile.mkdtemp(prefix='tierfs-prefetchbench-')
    cluster = os.path.join(work, 'cluster')
    os.makedirs(os.path.join(work, 'mnt'))
    store = [] if args.memstore else ['--bluestore', '--osd-size', args.osd_size]
    try:
        log('starting the cluster')
        env = fc.start_cluster(cluster, *store)
        tierfs = fc.Tierfs(binary, env, 'prefetchbench')
        tierfs.mkfs()
        log('importing the dataset')
        fc.run(binary, 'import', *tierfs.flags, os.path.join(data, 'small'), '/small',
               stdout=subprocess.DEVNULL)
        fc.settle()
        results = {}
        for rnd in range(args.rounds):
            for latency in ('', args.latency):
                for mode in MODES:
                    fc.drop_cluster_caches(cluster)
                    r = cold_epoch(binary, env, 'prefetchbench', work, mode, latency, args,
                                   seed=100 + rnd)
                    log(f'round {rnd + 1}, latency {latency or "0"}, {mode}: '
                        f'{r["seconds"]:.1f} s, {r["files_per_s"]:.0f} files/s')
                    results.setdefault((latency, mode), []).append(r)
        report(results, args)
    finally:
        fc.stop_cluster(cluster, os.path.join(work, 'mnt'))
        shutil.rmtree(work, ignore_errors=True)


def report(results, args):
    print(f'\nCold epoch: {args.files} files of ~{args.file_size >> 10} KiB, {args.readers} '
          f'readers, shuffled; median of {args.rounds} rounds (each round\'s seconds)')
    print('| back-end latency added | no prefetch | sweep | hinted | hinted vs none |')
    print('|---|---|---|---|---|')
    for latency in ('', args.latency):
        secs = {m: [r['seconds'] for r in results[(latency, m)]] for m in MODES}
        cells = [f"{statistics.median(secs[m]):.1f} s ({', '.join(f'{s:.1f}' for s in secs[m])})"
                 for m in MODES]
        speedup = statistics.median(secs['none']) / statistics.median(secs['hint'])
        print(f'| {latency or "none"} | {cells[0]} | {cells[1]} | {cells[2]} | {speedup:.2f}x |')


if __name__ == '__main__':
    main()
