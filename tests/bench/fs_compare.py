#!/usr/bin/env python3
"""tierfs against ceph-fuse (CephFS) and `rados bench`, side by side in one run on one fresh
local cluster (deploy/dev-cluster with --mds): a tree of small files read in a shuffled order
by parallel readers (cold, then warm), large files streamed, a checkpoint written and fsynced,
and a recursive stat walk; plus each daemon's peak RSS. Prints a Markdown table.

The small files are read by two kinds of readers (--loader): 8 Python multiprocessing processes
(a PyTorch DataLoader's shape), and tests/bench/bench_loader's 8 C++ threads, which check every
byte against the dataset's manifest. On 2 cores shared with the OSD, the Python readers' own CPU
is a large part of an epoch: the C++ readers measure the filesystems more and their readers less.

Before the measured runs, every file is read once, unmeasured: the OSD's virtual disk is cached
by the host, and this puts every run on the same footing. "Cold" means a fresh mount (a new
daemon: no cache in it), the kernel page cache dropped, and the cluster's caches dropped too
(`ceph tell osd.* cache drop`, and the MDS's for CephFS), so that data and metadata come from the
OSD's disk for every client alike. --warm-cluster keeps the cluster's caches (then "cold"
measures the clients more than the disk). The cold reads run in --rounds rounds, each client and
`rados bench` in turn, and the ratios are printed round by round: this machine drifts.

Usage: tests/bench/fs_compare.py [--files 10000] [--file-size 110K] [--readers 8]
         [--large 4] [--large-size 512M] [--checkpoint 2G] [--rounds 3] [--memstore] [--osd-size 40G]
         [--no-cephfs] [--warm-cluster] [--loader both|python|native] [--build build] [--data DIR]
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, HERE)
import dataset  # noqa: E402
import fs_workloads as wl  # noqa: E402

LOADERS = {'python': '', 'native': ' (bench_loader)'}  # loader -> suffix of its metrics' names


def size_arg(text):
    m = re.fullmatch(r'(\d+)([KMG]?)', text)
    if not m:
        raise argparse.ArgumentTypeError(f'bad size {text}')
    return int(m.group(1)) << {'': 0, 'K': 10, 'M': 20, 'G': 30}[m.group(2)]


def log(msg):
    print(f'[{time.strftime("%H:%M:%S")}] {msg}', file=sys.stderr, flush=True)


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def drop_caches():
    try:
        os.sync()
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3\n')
        return True
    except OSError:
        return False


def disk_sectors_written():
    total = 0
    with open('/proc/diskstats') as f:
        for line in f:
            fields = line.split()
            name = fields[2]  # whole disks only: partitions would count twice
            if os.path.exists(f'/sys/block/{name}') and not name.startswith(('loop', 'ram')):
                total += int(fields[9])
    return total


def settle(quiet_seconds=3, limit=180):
    """Waits until the disks have written less than 1 MiB/s for `quiet_seconds` in a row (the
    OSD flushes and compacts for a while after a large write; a run that starts then measures
    that, not the client)."""
    quiet, last, start = 0, disk_sectors_written(), time.time()
    while quiet < quiet_seconds and time.time() - start < limit:
        time.sleep(1)
        now = disk_sectors_written()
        quiet = quiet + 1 if (now - last) * 512 < (1 << 20) else 0
        last = now


def start_cluster(cluster, *flags):
    """Starts a deploy/dev-cluster cluster in `cluster`; its client environment as a dict."""
    run(os.path.join(ROOT, 'deploy/dev-cluster/start.sh'), *flags, cluster,
        stdout=subprocess.DEVNULL)
    env = dict(re.findall(r'^(?:export )?(\w+)=(.*)$',
                          open(os.path.join(cluster, 'client.env')).read(), re.M))
    return {k: v.strip('"\'') for k, v in env.items()}


def stop_cluster(cluster, mnt):
    """Unmounts what is left at `mnt` and stops and removes the cluster (for finally blocks)."""
    if os.path.ismount(mnt):
        subprocess.run(['umount', '-l', mnt])
    subprocess.run([os.path.join(ROOT, 'deploy/dev-cluster/stop.sh'), '--purge', cluster],
                   stdout=subprocess.DEVNULL)


def drop_cluster_caches(cluster):
    """Empties the OSDs' BlueStore caches and the MDS's metadata cache; True when both took."""
    ceph = ['ceph', '-c', os.path.join(cluster, 'ceph.conf'), '-n', 'client.admin']
    ok = True
    for target in ('osd.*', 'mds.*'):
        done = subprocess.run(ceph + ['tell', target, 'cache', 'drop'], capture_output=True)
        ok = ok and done.returncode == 0
    return ok


def make_dataset(root, files, file_size, large, large_size):
    marker = os.path.join(root, '.complete')
    if os.path.exists(marker):
        dataset.write_manifest(root, 'small')  # made before bench_loader read them: none
        return
    log(f'generating the dataset in {root}')
    shutil.rmtree(root, ignore_errors=True)
    rnd = random.Random(42)
    per_class = 1000
    for i in range(files):
        d = os.path.join(root, 'small', f'class_{i // per_class:03d}')
        os.makedirs(d, exist_ok=True)
        n = int(file_size * rnd.uniform(0.8, 1.2))
        with open(os.path.join(d, f'img_{i:06d}.jpg'), 'wb') as f:
            f.write(os.urandom(n))  # like JPEG: incompressible
    os.makedirs(os.path.join(root, 'large'), exist_ok=True)
    block = os.urandom(4 << 20)
    for i in range(large):
        with open(os.path.join(root, 'large', f'shard_{i}.tar'), 'wb') as f:
            for _ in range(large_size // len(block)):
                f.write(os.urandom(64) + block[64:])  # distinct chunks, incompressible
    dataset.write_manifest(root, 'small')
    open(marker, 'w').close()


def mount_with_config(binary, cfg, mnt):
    """`tierfs mount -f CFG MNT` in the background, once the mount is up; the process."""
    proc = subprocess.Popen([binary, 'mount', '-f', cfg, mnt], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.ismount(mnt):
            return proc
        if proc.poll() is not None:
            sys.exit(f'tierfs mount failed ({proc.returncode})')
        time.sleep(0.1)
    sys.exit('tierfs mount did not come up')


def vm_hwm_mib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    return 0


class Tierfs:
    def __init__(self, binary, env, ns, extra=()):
        self.name = 'tierfs' + (' ' + ' '.join(extra) if extra else '')
        self.binary, self.extra = binary, list(extra)
        self.flags = ['--backend', 'rados', '--conf', env['TIERFS_CEPH_CONF'], '--keyring',
                      env['TIERFS_CEPH_KEYRING'], '--user', env['TIERFS_CEPH_USER'], '--pool',
                      env['TIERFS_CEPH_POOL'], '--namespace', ns]
        self.proc = None

    def mkfs(self):
        run(self.binary, 'mkfs', *self.flags, '--if-missing', stdout=subprocess.DEVNULL)

    def mount(self, mnt, read_only=False):
        extra = self.extra + (['--read-only'] if read_only else [])
        self.proc = subprocess.Popen([self.binary, 'mount', '-f', *self.flags, *extra, mnt])
        for _ in range(200):
            if os.path.ismount(mnt):
                return
            if self.proc.poll() is not None:
                sys.exit(f'tierfs mount failed ({self.proc.returncode})')
            time.sleep(0.1)
        sys.exit('tierfs mount did not come up')

    def rss(self):
        return vm_hwm_mib(self.proc.pid)

    def unmount(self, mnt):
        run('fusermount3', '-u', mnt)
        if self.proc.wait(timeout=600) != 0:
            sys.exit(f'tierfs exited with {self.proc.returncode}')


class CephFuse:
    name = 'ceph-fuse'

    def __init__(self, cluster):
        self.cluster = cluster

    def mkfs(self):
        pass

    def mount(self, mnt, read_only=False):
        run(os.path.join(ROOT, 'deploy/dev-cluster/cephfs-mount.sh'), self.cluster, mnt,
            stdout=subprocess.DEVNULL)

    def rss(self):
        pids = sorted(glob.glob(os.path.join(self.cluster, 'run', 'ceph-fuse.*.pid')),
                      key=os.path.getmtime)
        with open(pids[-1]) as f:
            return vm_hwm_mib(int(f.read().strip()))

    def unmount(self, mnt):
        run(os.path.join(ROOT, 'deploy/dev-cluster/cephfs-mount.sh'), '--unmount', self.cluster,
            mnt, stdout=subprocess.DEVNULL)


def go_cold(args, cluster):
    settle()
    drop_caches()
    if not args.warm_cluster and not drop_cluster_caches(cluster):
        sys.exit('could not drop the cluster caches (ceph tell ... cache drop)')


def prepare(fs, data, mnt, args, cluster):
    """Copies the dataset in, writes the checkpoint, reads everything once; returns {metric}."""
    r = {}
    fs.mkfs()
    fs.mount(mnt)
    log(f'{fs.name}: copying the dataset in')
    t = time.perf_counter()
    for part in ('small', 'large'):
        shutil.rmtree(os.path.join(mnt, part), ignore_errors=True)
        run('cp', '-r', os.path.join(data, part), os.path.join(mnt, part))
    r['copy in (s)'] = time.perf_counter() - t
    settle()
    log(f'{fs.name}: checkpoint')
    r['checkpoint write+fsync MiB/s'] = wl.checkpoint(
        os.path.join(mnt, 'checkpoint.pt'), args.checkpoint)['mib_per_s']
    # The OSD's disk is a virtual one: the host caches what was read from it, so the first read
    # of a dataset is slower than any later one. One unmeasured pass makes every measured run
    # find the host in the same state.
    go_cold(args, cluster)
    log(f'{fs.name}: reading everything once (not measured)')
    wl.small_epoch(os.path.join(mnt, 'small'), args.readers, seed=3)
    wl.large_stream(os.path.join(mnt, 'large'))
    fs.unmount(mnt)
    return r


def native_epoch(mnt, data, args, seed):
    """bench_loader's shuffled epoch over the small files: its figures (every byte checked)."""
    loader = os.path.join(args.build, 'tests', 'bench', 'bench_loader')
    manifest = os.path.join(data, 'small.manifest')
    done = subprocess.run([loader, '--root', mnt, '--manifest', manifest, '--readers',
                           str(args.readers), '--order', 'shuffled', '--seed', str(seed)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f'bench_loader failed ({done.returncode}): {done.stderr.strip()[-2000:]}')
    return json.loads(done.stdout.strip().splitlines()[-1])


def small_files(fs, read_only, loader, mnt, data, args, cluster, seed):
    """A cold then a warm shuffled epoch on a fresh mount, by `loader`'s readers; {metric}."""
    go_cold(args, cluster)
    fs.mount(mnt, read_only)
    if loader == 'native':
        cold, warm = (native_epoch(mnt, data, args, seed + i) for i in (0, 1))
    else:
        cold, warm = (wl.small_epoch(os.path.join(mnt, 'small'), args.readers, seed=seed + i)
                      for i in (0, 1))
    r = {'small cold files/s': cold['files_per_s'], 'small cold MiB/s': cold['mib_per_s'],
         'small cold p99 ms': cold['p99_ms'], 'small warm files/s': warm['files_per_s'],
         'small warm p99 ms': warm['p99_ms']}
    r = {m + LOADERS[loader]: v for m, v in r.items()}
    r['daemon peak RSS MiB'] = fs.rss()
    fs.unmount(mnt)
    return r


def large_files(fs, mnt, args, cluster):
    go_cold(args, cluster)
    fs.mount(mnt)
    r = {'large cold MiB/s': wl.large_stream(os.path.join(mnt, 'large'))['mib_per_s']}
    fs.unmount(mnt)
    return r


def stat_walk(fs, mnt, args, cluster):
    go_cold(args, cluster)
    fs.mount(mnt)
    r = {'stat walk cold entries/s': wl.stat_walk(mnt)['entries_per_s'],
         'stat walk warm entries/s': wl.stat_walk(mnt)['entries_per_s'],
         'daemon peak RSS MiB': fs.rss()}
    fs.unmount(mnt)
    return r


class RadosBench:
    """`rados bench` objects of the datasets' sizes, written once and read back cold (16 in
    flight) in every round, between the filesystems' runs."""
    SIZES = ((128 << 10, '128K'), (4 << 20, '4M'))

    def __init__(self, env, seconds=10):
        self.base = ['rados', '-c', env['TIERFS_CEPH_CONF'], '-n', env['TIERFS_CEPH_USER'], '-p',
                     env['TIERFS_CEPH_POOL']]
        self.seconds = seconds

    def write(self):
        for size, label in self.SIZES:
            run(*self.base, 'bench', str(self.seconds), 'write', '-b', str(size), '-t', '16',
                '--no-cleanup', '--run-name', f'fsbench-{label}', stdout=subprocess.DEVNULL)

    def read(self, label, args, cluster):
        """MiB/s (what rados bench prints as MB/sec is MiB/s)."""
        go_cold(args, cluster)
        text = subprocess.run(self.base + ['bench', str(self.seconds), 'seq', '-t', '16',
                                           '--run-name', f'fsbench-{label}'],
                              check=True, capture_output=True, text=True).stdout
        return float(re.search(r'^Bandwidth \(MB/sec\):\s+([\d.]+)', text, re.M).group(1))

    def cleanup(self):
        for _, label in self.SIZES:
            subprocess.run(self.base + ['cleanup', '--run-name', f'fsbench-{label}'],
                           capture_output=True)


def add(results, name, metrics):
    for metric, value in metrics.items():
        results.setdefault(name, {}).setdefault(metric, []).append(value)


def measure(filesystems, rb, data, mnt, args, cluster):
    """Every workload: {variant: {metric: [value per round]}}. The cold reads run in rounds,
    each filesystem and `rados bench` in turn, so that a round's ratios compare runs made minutes
    apart: this machine drifts by up to 1.5x over an hour."""
    results = {}
    for fs in filesystems:
        add(results, fs.name, prepare(fs, data, mnt, args, cluster))
    rb.write()
    for rnd in range(args.rounds):
        for fs in filesystems:
            for read_only in ([False, True] if isinstance(fs, Tierfs) else [False]):
                name = fs.name + (' --read-only' if read_only else '')
                for loader in args.loaders:
                    log(f'round {rnd + 1}: {name}: small files, cold then warm, {loader} readers')
                    add(results, name, small_files(fs, read_only, loader, mnt, data, args,
                                                   cluster, 10 * rnd + 1))
        log(f'round {rnd + 1}: rados bench, 128 KiB objects')
        add(results, 'rados bench', {'small cold files/s': rb.read('128K', args, cluster) * 8})
        for fs in filesystems:
            log(f'round {rnd + 1}: {fs.name}: large files, cold')
            add(results, fs.name, large_files(fs, mnt, args, cluster))
        log(f'round {rnd + 1}: rados bench, 4 MiB objects')
        add(results, 'rados bench', {'large cold MiB/s': rb.read('4M', args, cluster)})
    for fs in filesystems:
        log(f'{fs.name}: stat walk, cold then warm')
        add(results, fs.name, stat_walk(fs, mnt, args, cluster))
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--files', type=int, default=10000)
    p.add_argument('--file-size', type=size_arg, default=110 << 10)
    p.add_argument('--readers', type=int, default=8)
    p.add_argument('--large', type=int, default=4)
    p.add_argument('--large-size', type=size_arg, default=512 << 20)
    p.add_argument('--checkpoint', type=size_arg, default=2 << 30)
    p.add_argument('--rounds', type=int, default=3, help='rounds of cold reads (default 3)')
    p.add_argument('--memstore', action='store_true', help='memstore OSD (default: BlueStore)')
    p.add_argument('--osd-size', default='40G')
    p.add_argument('--no-cephfs', action='store_true')
    p.add_argument('--warm-cluster', action='store_true',
                   help='do not drop the OSD and MDS caches before a cold run')
    p.add_argument('--loader', choices=('both', 'python', 'native'), default='both',
                   help='who reads the small files: Python processes, bench_loader threads, or '
                        'both in turn (default)')
    p.add_argument('--build', default=os.path.join(ROOT, 'build'))
    p.add_argument('--data', help='dataset directory (kept; default under /tmp)')
    args = p.parse_args()
    args.loaders = list(LOADERS) if args.loader == 'both' else [args.loader]

    binary = os.path.join(args.build, 'tools', 'tierfs')
    data = args.data or f'/tmp/tierfs-bench-data-{args.files}-{args.file_size}-{args.large}'
    make_dataset(data, args.files, args.file_size, args.large, args.large_size)
    work = tempfile.mkdtemp(prefix='tierfs-fsbench-')
    cluster, mnt = os.path.join(work, 'cluster'), os.path.join(work, 'mnt')
    os.makedirs(mnt)
    store = [] if args.memstore else ['--bluestore', '--osd-size', args.osd_size]
    try:
        log('starting the cluster')
        env = start_cluster(cluster, '--mgr', '--mds', *store)
        filesystems = [Tierfs(binary, env, 'bench')]
        if not args.no_cephfs:
            filesystems.append(CephFuse(cluster))
        rb = RadosBench(env)
        try:
            report(measure(filesystems, rb, data, mnt, args, cluster), args)
        finally:
            rb.cleanup()
    finally:
        stop_cluster(cluster, mnt)
        shutil.rmtree(work, ignore_errors=True)


def cell(values, metric):
    """The median of the rounds (the peak for RSS), with their range when there are several."""
    if not values:
        return ''
    if 'RSS' in metric:
        return f'{max(values):.0f}'
    mid = statistics.median(values)
    spread = f' ({min(values):.0f}-{max(values):.0f})' if len(values) > 1 else ''
    return f'{mid:.1f}{spread}'


def ratios(results, num, num_metric, den, den_metric):
    a, b = results.get(num, {}).get(num_metric), results.get(den, {}).get(den_metric)
    if not a or not b:
        return ''
    return ', '.join(f'{x / y:.2f}' for x, y in zip(a, b))


def report(results, args):
    store = 'memstore' if args.memstore else 'BlueStore'
    print(f'\n{args.files} files of ~{args.file_size >> 10} KiB, {args.readers} readers; '
          f'{args.large} x {args.large_size >> 20} MiB; checkpoint {args.checkpoint >> 20} MiB; '
          f'{store}; {args.rounds} rounds; page cache dropped: {drop_caches()}; '
          f'cluster caches dropped: {not args.warm_cluster}\n')
    order = ('tierfs', 'tierfs --read-only', 'ceph-fuse', 'rados bench')
    names = sorted(results, key=lambda n: order.index(n) if n in order else len(order))
    print('| metric (median of rounds, range) | ' + ' | '.join(names) + ' |')
    print('|---|' + '---|' * len(names))
    metrics = list(dict.fromkeys(m for n in names for m in results[n]))
    for m in metrics:
        print(f'| {m} | ' + ' | '.join(cell(results[n].get(m), m) for n in names) + ' |')
    print('\nRatios, round by round:')
    rows = []
    for loader, suffix in LOADERS.items():
        small = 'small cold files/s' + suffix
        rows += [(f'small cold ({loader} readers), tierfs / ceph-fuse', 'tierfs', small,
                  'ceph-fuse', small),
                 (f'small cold ({loader} readers), tierfs --read-only / ceph-fuse',
                  'tierfs --read-only', small, 'ceph-fuse', small),
                 (f'small cold ({loader} readers), tierfs --read-only / rados bench 128 KiB '
                  'objects/s', 'tierfs --read-only', small, 'rados bench', 'small cold files/s')]
    rows += [('large cold, tierfs / rados bench 4 MiB', 'tierfs', 'large cold MiB/s',
              'rados bench', 'large cold MiB/s'),
             ('stat walk cold, tierfs / ceph-fuse', 'tierfs', 'stat walk cold entries/s',
              'ceph-fuse', 'stat walk cold entries/s')]
    for label, num, metric, den, den_metric in rows:
        found = ratios(results, num, metric, den, den_metric)
        if found:  # a loader that did not run (--loader) has none
            print(f'- {label}: {found}')


if __name__ == '__main__':
    main()
