#!/usr/bin/python3
"""tierfs against the systems users would pick instead, on one local Ceph cluster (BlueStore on a
file, with an MDS and a radosgw), side by side: ceph-fuse (CephFS), s3fs and rclone mount (over
radosgw, their disk caches on), and the limits: the local ext4 disk, a passthrough FUSE
filesystem over it, and `rados bench`. Run it through tests/bench/compare.sh (installs and
builds what it needs); docs/BENCHMARKS.md explains every figure.

Workloads (every reader checks every byte against the dataset's manifest):
  loader      a tree of ImageNet-like files (~110 KB) read in a fresh shuffled order each epoch
              by 8 reader threads (bench_loader): epoch 1 cold (fresh mount, empty cache, page
              and cluster caches dropped), epoch 2 with the page cache dropped (disk cache warm),
              epoch 3 right after (page cache warm)
  python      the same tree through a Python multiprocessing DataLoader (pyloader.py): cold,
              then with the page cache dropped
  over        a dataset 1.5x the disk cache, 3 epochs, page cache dropped between them: files/s
              and the hit ratio (1 - bytes the OSD read / dataset bytes)
  shards      large files streamed front to back by 4 readers, cold
  checkpoint  one file written and fsynced until it is in Ceph, then read back cold
  walk        a recursive lstat of every tree, cold then warm
Each system and `rados bench` take turns within a round; each figure is the median of the
rounds, with the range.
"""
import argparse
import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dataset  # noqa: E402
import fs_compare as fc  # noqa: E402
import fs_workloads as wl  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402

log = fc.log

QUICK = dict(files=800, over_cache='128M', shards=2, shard_size='128M', checkpoint='512M',
             cache='1G', rounds=1, rados_seconds=5)
FULL = dict(files=4000, over_cache='1G', shards=4, shard_size='512M', checkpoint='2G',
            cache='4G', rounds=3, rados_seconds=10)


class Results:
    """{system: {metric: [value per run]}}"""

    def __init__(self):
        self.values = {}

    def add(self, system, metric, value):
        self.values.setdefault(system, {}).setdefault(metric, []).append(value)


class Bench:
    def __init__(self, args, cluster, env, data, work):
        self.args, self.cluster, self.env, self.data = args, cluster, env, data
        self.mnt = os.path.join(work, 'mnt')
        os.makedirs(self.mnt, exist_ok=True)
        self.loader = os.path.join(args.build, 'tests', 'bench', 'bench_loader')
        self.results = Results()
        self.ceph = ['ceph', '-c', os.path.join(cluster, 'ceph.conf'), '-n', 'client.admin']

    # --- helpers ---
    def cold(self):
        """Page cache, and the OSD's and the MDS's caches, dropped; the disks quiet."""
        fc.settle()
        fc.drop_caches()
        if not fc.drop_cluster_caches(self.cluster):
            sys.exit('could not drop the cluster caches (ceph tell ... cache drop)')

    def osd_read_bytes(self):
        total = 0
        for osd in subprocess.run(self.ceph + ['osd', 'ls'], capture_output=True, text=True,
                                  check=True).stdout.split():
            dump = subprocess.run(self.ceph + ['tell', f'osd.{osd}', 'perf', 'dump', 'osd'],
                                  capture_output=True, text=True, check=True).stdout
            total += json.loads(dump)['osd']['op_r_out_bytes']
        return total

    def read(self, system, root, manifest, tool='c++', readers=8, seed=0, order='shuffled'):
        """One pass over a manifest's files; its figures. A wrong byte is counted, not hidden."""
        path = os.path.join(self.data, f'{manifest}.manifest')
        if tool == 'c++':
            cmd = [self.loader, '--root', root, '--manifest', path, '--readers', str(readers),
                   '--seed', str(seed), '--order', order]
        else:
            cmd = [sys.executable, os.path.join(HERE, 'pyloader.py'), '--root', root,
                   '--manifest', path, '--readers', str(readers), '--seed', str(seed)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode not in (0, 1) or not done.stdout.strip():
            sys.exit(f'{system.name}: {" ".join(cmd)} failed: {done.stderr.strip()[-2000:]}')
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        if figures['bad']:
            log(f'{system.name}: {figures["bad"]} files WRONG in {manifest}: '
                f'{done.stderr.strip()[-1000:]}')
        self.results.add(system.name, 'files read wrong', figures['bad'])
        return figures

    @contextlib.contextmanager
    def mounted(self, system, cache=None, cold=True, **kw):
        """A fresh mount of `system` (its cache empty and, if `cold`, every other cache dropped
        first); yields the directory to read."""
        if cold:
            self.cold()
        root = system.mount(self.mnt, fc.size_arg(cache or self.args.cache), **kw)
        try:
            yield root
        finally:
            system.unmount(self.mnt)

    # --- workloads ---
    def loader_epochs(self, system, rnd):
        name = system.name
        with self.mounted(system) as root:
            seed = 100 * rnd
            e1 = self.read(system, root, 'small', seed=seed + 1)
            fc.drop_caches()
            e2 = self.read(system, root, 'small', seed=seed + 2)
            e3 = self.read(system, root, 'small', seed=seed + 3)
            for label, e in (('cold', e1), ('warm, page cache dropped', e2), ('warm', e3)):
                for field, unit in (('files_per_s', 'files/s'), ('mib_per_s', 'MiB/s'),
                                    ('p50_ms', 'p50 ms'), ('p99_ms', 'p99 ms')):
                    self.results.add(name, f'loader {label} {unit}', e[field])
            fc.drop_caches()
            py = self.read(system, root, 'small', tool='python', seed=seed + 4)
            self.results.add(name, 'python loader warm, page cache dropped files/s',
                             py['files_per_s'])
            self.results.add(name, 'daemon peak RSS MiB', system.rss_mib())
        with self.mounted(system) as root:
            py = self.read(system, root, 'small', tool='python', seed=100 * rnd + 5)
            self.results.add(name, 'python loader cold files/s', py['files_per_s'])

    def shards(self, system):
        with self.mounted(system) as root:
            r = self.read(system, root, 'shards', readers=4, order='manifest')
            self.results.add(system.name, 'shards cold MiB/s', r['mib_per_s'])

    def walk(self, system):
        with self.mounted(system) as root:
            trees = [os.path.join(root, part) for part in ('small', 'over', 'shards')]
            for state in ('cold', 'warm'):
                n, seconds = 0, 0.0
                for tree in trees:
                    w = wl.stat_walk(tree)
                    n, seconds = n + w['entries'], seconds + w['seconds']
                self.results.add(system.name, f'walk {state} entries/s', n / seconds)
            self.results.add(system.name, 'daemon peak RSS MiB', system.rss_mib())

    def over(self, system):
        """3 epochs of a dataset 1.5x the disk cache; hit ratio from the OSD's read bytes.
        ceph-fuse has no disk cache: its memory cache (client_oc_size) is all it can hit."""
        if isinstance(system, (peers.Ext4, peers.Passthrough)):
            return
        size = dataset.manifest_bytes(self.data, 'over')
        with self.mounted(system, cache=self.args.over_cache, training=True) as root:
            for epoch in (1, 2, 3):
                fc.drop_caches()
                before = self.osd_read_bytes()
                r = self.read(system, root, 'over', seed=200 + epoch)
                backend = self.osd_read_bytes() - before
                self.results.add(system.name, f'over epoch {epoch} files/s', r['files_per_s'])
                self.results.add(system.name, f'over epoch {epoch} hit ratio',
                                 max(0.0, 1 - backend / size))

    def checkpoint(self, system, rnd, block_size=4 << 20):
        """Written in 4 MiB writes and fsynced (and, for rclone, uploaded); read back cold and
        compared with what was written."""
        if isinstance(system, peers.Passthrough):
            return
        size = fc.size_arg(self.args.checkpoint)
        block = os.urandom(block_size)  # written again and again: the file is block, block, ...
        rel = f'checkpoint-{system.name}-{rnd}.pt'  # s3fs and rclone share a bucket
        with self.mounted(system, cold=False, read_only=False) as root:
            t = time.perf_counter()
            with open(os.path.join(root, rel), 'wb', buffering=0) as f:
                for offset in range(0, size, block_size):
                    f.write(block[:min(block_size, size - offset)])
                os.fsync(f.fileno())
            system.wait_durable(os.path.join(root, rel), size)
            self.results.add(system.name, 'checkpoint write until in Ceph MiB/s',
                             size / (time.perf_counter() - t) / 2**20)
        with self.mounted(system) as root:
            t, n, wrong = time.perf_counter(), 0, 0
            with open(os.path.join(root, rel), 'rb') as f:
                while chunk := f.read(block_size):
                    wrong += chunk != block[:len(chunk)]
                    n += len(chunk)
            self.results.add(system.name, 'checkpoint read cold MiB/s',
                             n / (time.perf_counter() - t) / 2**20)
            if n != size or wrong:
                log(f'{system.name}: checkpoint read back WRONG: {n} of {size} bytes, '
                    f'{wrong} blocks differ')
            self.results.add(system.name, 'files read wrong', int(n != size or wrong > 0))
            if isinstance(system, peers.Ext4):
                os.unlink(os.path.join(root, rel))  # not into the dataset's directory for good

    def rados_bench(self, rb):
        name = 'rados bench'
        self.cold()
        self.results.add(name, 'loader cold files/s', rb.read('128K', self.args, self.cluster) * 8)
        self.results.add(name, 'shards cold MiB/s', rb.read('4M', self.args, self.cluster))
        text = subprocess.run(rb.base + ['bench', str(rb.seconds), 'write', '-b', str(4 << 20),
                                         '-t', '16', '--run-name', 'compare-write'],
                              check=True, capture_output=True, text=True).stdout
        mib = float(next(line.split()[-1] for line in text.splitlines()
                         if line.startswith('Bandwidth (MB/sec)')))
        self.results.add(name, 'checkpoint write until in Ceph MiB/s', mib)


def start(args, work):
    cluster = os.path.join(work, 'cluster')
    rgw = ['--rgw'] if {'s3fs', 'rclone'} & set(args.systems) else []
    log(f'starting the cluster (BlueStore, MDS{", radosgw" if rgw else ""})')
    env = fc.start_cluster(cluster, '--mgr', '--mds', *rgw, '--bluestore', '--osd-size',
                           args.osd_size)
    return cluster, env


def make_systems(args, cluster, env, data, work):
    tierfs_bin = os.path.join(args.build, 'tools', 'tierfs')
    passthrough_bin = os.path.join(args.build, 'tests', 'bench', 'passthrough_fs')
    every = {
        'tierfs': lambda: peers.Tierfs(tierfs_bin, env, work),
        'ceph-fuse': lambda: peers.CephFuse(cluster),
        's3fs': lambda: peers.S3Mount('s3fs', cluster, work, env),
        'rclone': lambda: peers.S3Mount('rclone', cluster, work, env),
        'passthrough': lambda: peers.Passthrough(passthrough_bin, data),
        'ext4': lambda: peers.Ext4(data),
    }
    unknown = set(args.systems) - set(every)
    if unknown:
        sys.exit(f'--systems: unknown {", ".join(sorted(unknown))}; known: {", ".join(every)}')
    return [every[n]() for n in every if n in args.systems]


def read_extents(path, block=8 << 20):
    """Reads the allocated parts of a (sparse) file once."""
    fd = os.open(path, os.O_RDONLY)
    try:
        end, pos = os.fstat(fd).st_size, 0
        while pos < end:
            try:
                pos = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after pos
                break
            hole = os.lseek(fd, pos, os.SEEK_HOLE)
            while pos < hole:
                pos += len(os.pread(fd, min(block, hole - pos), pos)) or hole - pos
    finally:
        os.close(fd)


def warm_host(bench):
    """The disks here are virtual: the host caches what was read from them, so whichever system
    read a block first would pay more than the others. One read of the OSD's block file and of
    the local dataset, before any measurement, puts every system on the same footing (the
    guest's page cache is dropped before each cold run; the host's stays)."""
    log('reading the OSD device and the local dataset once (not measured)')
    for block in glob.glob(os.path.join(bench.cluster, 'data', 'osd.*.block')):
        read_extents(block)
    for d, _, names in os.walk(bench.data):
        for n in names:
            read_extents(os.path.join(d, n))
    fc.drop_caches()


def load_all(bench, systems):
    parts = ('small', 'over', 'shards')
    bucket_loaded = False
    for s in systems:
        if isinstance(s, peers.S3Mount):
            if bucket_loaded:
                continue
            bucket_loaded = True
        log(f'{s.name}: loading the dataset')
        t = time.perf_counter()
        s.load(bench.data, bench.mnt, parts)
        bench.results.add(s.name, 'load dataset s', time.perf_counter() - t)


def run(bench, systems, rb):
    rounds = bench.args.rounds
    for rnd in range(rounds):
        for s in systems:
            log(f'round {rnd + 1}/{rounds}: {s.name}: loader and python epochs')
            bench.loader_epochs(s, rnd)
            log(f'round {rnd + 1}/{rounds}: {s.name}: shards, walk, checkpoint')
            bench.shards(s)
            bench.walk(s)
            bench.checkpoint(s, rnd)
        log(f'round {rnd + 1}/{rounds}: rados bench')
        bench.rados_bench(rb)
    for s in systems:
        log(f'{s.name}: dataset 1.5x the cache, 3 epochs')
        bench.over(s)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--quick', action='store_true', help='small sizes, one round (< 10 min)')
    p.add_argument('--files', type=int)
    p.add_argument('--cache', help='disk cache of every system for the main workloads')
    p.add_argument('--over-cache', help='disk cache for the 1.5x workload')
    p.add_argument('--shards', type=int)
    p.add_argument('--shard-size')
    p.add_argument('--checkpoint')
    p.add_argument('--rounds', type=int)
    p.add_argument('--rados-seconds', type=int)
    p.add_argument('--osd-size', default='60G')
    p.add_argument('--systems', default='tierfs,ceph-fuse,s3fs,rclone,passthrough,ext4')
    p.add_argument('--build', default=os.path.join(fc.ROOT, 'build'))
    p.add_argument('--data', help='dataset directory (kept; default under /var/tmp)')
    p.add_argument('--out', default=os.path.join(fc.ROOT, 'bench-results'))
    args = p.parse_args()
    for k, v in (QUICK if args.quick else FULL).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.systems = args.systems.split(',')
    args.warm_cluster = False  # (fs_compare.RadosBench.read drops the cluster caches)
    return args


def main():
    args = parse_args()
    over_bytes = fc.size_arg(args.over_cache) * 3 // 2
    data = args.data or (f'/var/tmp/tierfs-compare-{args.files}-{args.over_cache}-'
                         f'{args.shards}x{args.shard_size}')
    log(f'dataset in {data}')
    dataset.make(data, args.files, over_bytes, args.shards, fc.size_arg(args.shard_size))
    work = tempfile.mkdtemp(prefix='tierfs-compare-')
    started = time.time()
    cluster = os.path.join(work, 'cluster')
    try:
        cluster, env = start(args, work)
        bench = Bench(args, cluster, env, data, work)
        systems = make_systems(args, cluster, env, data, work)
        rb = fc.RadosBench(env, args.rados_seconds)
        load_all(bench, systems)
        rb.write()
        warm_host(bench)
        try:
            run(bench, systems, rb)
        finally:
            rb.cleanup()
        config = {k: v for k, v in vars(args).items() if k != 'warm_cluster'}
        config['minutes'] = round((time.time() - started) / 60, 1)
        report.write(args.out, bench.results.values, config, data)
        log(f'results in {args.out} after {config["minutes"]} min')
    finally:
        fc.stop_cluster(cluster, os.path.join(work, 'mnt'))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
