#!/usr/bin/env python3
"""tierfs's cache device against the local ext4 disk and a passthrough FUSE filesystem (issue 4):
figures, not asserts. One run on the same files: a tree of small files read in a shuffled order
by parallel readers, and large files streamed, through

  - tierfs, mounted with a cache device big enough for the whole dataset, read once through the
    mount beforehand so that every chunk is on the device (no back-end reads while measuring);
  - ext4: the dataset directory on the local disk, read directly;
  - passthrough: tests/bench/passthrough_fs (libfuse low-level, the FUSE settings tierfs uses)
    serving the dataset directory: FUSE's own ceiling on this machine.

Two states, each measured on a fresh mount:
  device-warm      the kernel page cache dropped before each workload: tierfs serves from its
                   cache device (its memory cache is off: --cache-memory 0, unless
                   --memory-cache), ext4 and the passthrough from the disk;
  page-cache-warm  the same workload again right after, caches kept: re-reads served by the
                   kernel page cache (keep_cache for the FUSE filesystems).
  device-warm again  the large files once more with the page cache dropped, on the same mount:
                   a running daemon, its memory buffers in use already.
The filesystems take turns within each round (this machine drifts); the ratios are printed round
by round. tierfs's `user.tierfs.cache_stats` is read around its runs: `backend_reads` must not
grow.

Usage: tests/bench/cache_compare.py [--files 10000] [--file-size 110K] [--readers 8]
         [--large 2] [--large-size 512M] [--rounds 3] [--memstore] [--osd-size 20G]
         [--memory-cache] [--read-only] [--timeout 1] [--build build] [--data DIR]

--timeout sets the kernel's entry and attribute timeouts of both FUSE filesystems (tierfs's
--attr-timeout and --entry-timeout). At the default 1 s the page-cache-warm epoch, which starts
seconds after the names were looked up, sends a LOOKUP per file again; a dataset mount that
nobody rewrites can keep names and attributes longer (ext4 needs no such round trip).
"""
import argparse
import json
import os
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
import fs_compare as fc  # noqa: E402
import fs_workloads as wl  # noqa: E402

log = fc.log

TIERFS, PASSTHROUGH, EXT4 = 'tierfs', 'passthrough', 'ext4'
METRICS = (
    ('small files/s, device-warm', 'small_dev', 'files_per_s'),
    ('small p99 ms, device-warm', 'small_dev', 'p99_ms'),
    ('small files/s, page-cache-warm', 'small_pc', 'files_per_s'),
    ('small p99 ms, page-cache-warm', 'small_pc', 'p99_ms'),
    ('large MiB/s, device-warm', 'large_dev', 'mib_per_s'),
    ('large MiB/s, page-cache-warm', 'large_pc', 'mib_per_s'),
    ('large MiB/s, device-warm again (same mount)', 'large_dev2', 'mib_per_s'),
)


class Passthrough:
    name = PASSTHROUGH

    def __init__(self, binary, src, no_open=False, timeout=1.0):
        self.binary, self.src, self.proc = binary, src, None
        # As tierfs --read-only: OPEN answered with ENOSYS, and a read-only mount.
        self.extra = ['--no-open', '-o', 'ro'] if no_open else []
        self.extra += ['--timeout', f'{timeout:g}']

    def mount(self, mnt):
        self.proc = subprocess.Popen([self.binary, self.src, mnt, *self.extra])
        for _ in range(200):
            if os.path.ismount(mnt):
                return
            if self.proc.poll() is not None:
                sys.exit(f'passthrough_fs failed ({self.proc.returncode})')
            time.sleep(0.05)
        sys.exit('passthrough_fs did not come up')

    def unmount(self, mnt):
        fc.run('fusermount3', '-u', mnt)
        if self.proc.wait(timeout=120) != 0:
            sys.exit(f'passthrough_fs exited with {self.proc.returncode}')
        self.proc = None


class Ext4:
    """The dataset directory itself: nothing to mount."""
    name = EXT4

    def __init__(self, src):
        self.src = src

    def root(self, mnt):
        return self.src


def cache_stats(mnt):
    return json.loads(os.getxattr(mnt, 'user.tierfs.cache_stats'))


def dir_bytes(root):
    total = 0
    for d, _, names in os.walk(root):
        total += sum(os.lstat(os.path.join(d, n)).st_size for n in names)
    return total


def workloads(root, readers, seed):
    """device-warm then page-cache-warm: small files, then large files; {key: figures}."""
    r = {}
    fc.drop_caches()
    r['small_dev'] = wl.small_epoch(os.path.join(root, 'small'), readers, seed=seed)
    r['small_pc'] = wl.small_epoch(os.path.join(root, 'small'), readers, seed=seed + 1)
    fc.drop_caches()
    r['large_dev'] = wl.large_stream(os.path.join(root, 'large'))
    r['large_pc'] = wl.large_stream(os.path.join(root, 'large'))
    # Once more from the device: a daemon's first stream fills its memory with fresh buffers,
    # which this VM makes slow (docs/BENCHMARKS.md); a daemon that has run a while has them.
    fc.drop_caches()
    r['large_dev2'] = wl.large_stream(os.path.join(root, 'large'))
    return r


def run_one(fs, mnt, args, seed):
    if isinstance(fs, Ext4):
        return workloads(fs.src, args.readers, seed), None
    if isinstance(fs, fc.Tierfs):
        fs.mount(mnt, read_only=args.read_only)
    else:
        fs.mount(mnt)
    try:
        before = cache_stats(mnt) if isinstance(fs, fc.Tierfs) else None
        r = workloads(mnt, args.readers, seed)
        stats = None
        if before is not None:
            after = cache_stats(mnt)
            stats = {'before': before, 'after': after,
                     'backend_reads_during': after['backend_reads'] - before['backend_reads']}
    finally:
        fs.unmount(mnt)
    return r, stats


def index_bytes_per_entry(build):
    """What the unit test RegionCache.TheMemoryIndexTakesAtMost64BytesAnEntry prints."""
    binary = os.path.join(build, 'tests', 'tierfs_unit_tests')
    if not os.path.exists(binary):
        return None
    try:
        test = 'RegionCache.TheMemoryIndexTakesAtMost64BytesAnEntry'
        out = subprocess.run([binary, f'--gtest_filter={test}'], capture_output=True, text=True,
                             timeout=300).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    m = re.search(r'index: ([\d.]+) bytes per entry', out)
    return float(m.group(1)) if m else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--files', type=int, default=10000)
    p.add_argument('--file-size', type=fc.size_arg, default=110 << 10)
    p.add_argument('--readers', type=int, default=8)
    p.add_argument('--large', type=int, default=2)
    p.add_argument('--large-size', type=fc.size_arg, default=512 << 20)
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--memstore', action='store_true', help='memstore OSD (default: BlueStore)')
    p.add_argument('--osd-size', default='20G')
    p.add_argument('--memory-cache', action='store_true',
                   help="keep tierfs's memory chunk cache (default: --cache-memory 0, the "
                        'device alone)')
    p.add_argument('--read-only', action='store_true',
                   help='mount tierfs --read-only (no OPEN/RELEASE round trips), and the '
                        'passthrough likewise (--no-open)')
    p.add_argument('--timeout', type=float, default=1.0,
                   help='kernel entry and attribute timeouts (s) of tierfs and the passthrough')
    p.add_argument('--build', default=os.path.join(ROOT, 'build'))
    p.add_argument('--data', help='dataset directory (kept; default under /tmp)')
    args = p.parse_args()

    tierfs_bin = os.path.join(args.build, 'tools', 'tierfs')
    passthrough_bin = os.path.join(args.build, 'tests', 'bench', 'passthrough_fs')
    for b in (tierfs_bin, passthrough_bin):
        if not os.path.exists(b):
            sys.exit(f'{b} is missing: ninja -C {args.build}')
    data = args.data or f'/tmp/tierfs-bench-data-{args.files}-{args.file_size}-{args.large}'
    fc.make_dataset(data, args.files, args.file_size, args.large, args.large_size)
    data_bytes = dir_bytes(data)
    work = tempfile.mkdtemp(prefix='tierfs-cachebench-')
    cluster, mnt = os.path.join(work, 'cluster'), os.path.join(work, 'mnt')
    os.makedirs(mnt)
    device_mib = int(data_bytes * 1.3) // 2**20 + 64
    device = os.path.join(work, 'cache0')
    store = ['--memstore'] if args.memstore else ['--bluestore', '--osd-size', args.osd_size]
    mounted_by_us = []
    try:
        log(f'starting the cluster ({store[0][2:]})')
        env = fc.start_cluster(cluster, *([] if args.memstore else store))
        extra = ['--cache-device', f'{device}={device_mib}M']
        if not args.memory_cache:
            extra += ['--cache-memory', '0']
        extra += ['--attr-timeout', f'{args.timeout:g}s', '--entry-timeout', f'{args.timeout:g}s']
        tierfs = fc.Tierfs(tierfs_bin, env, 'cachebench', extra)
        tierfs.name = TIERFS
        tierfs.mkfs()
        log(f'importing {data_bytes / 2**20:.0f} MiB into tierfs')
        t = time.perf_counter()
        fc.run(tierfs_bin, 'import', *tierfs.flags, os.path.join(data, 'small'), '/small',
               stdout=subprocess.DEVNULL)
        fc.run(tierfs_bin, 'import', *tierfs.flags, os.path.join(data, 'large'), '/large',
               stdout=subprocess.DEVNULL)
        log(f'imported in {time.perf_counter() - t:.0f} s; settling')
        fc.settle()

        log(f'filling the cache device ({device_mib} MiB) through the mount')
        mounted_by_us.append(mnt)
        tierfs.mount(mnt, read_only=args.read_only)
        # A chunk the device could not take at once (its write queue full) is not admitted: read
        # again until a pass meets no back-end read.
        for attempt in range(4):
            before = cache_stats(mnt)['backend_reads']
            fc.drop_caches()
            wl.small_epoch(os.path.join(mnt, 'small'), args.readers, seed=3 + attempt)
            wl.large_stream(os.path.join(mnt, 'large'))
            time.sleep(2)  # the open region of the device is sealed after a second or so
            filled = cache_stats(mnt)
            log(f'fill pass {attempt + 1}: {filled["backend_reads"] - before} back-end reads')
            if attempt > 0 and filled['backend_reads'] == before:
                break
        tierfs.unmount(mnt)
        log(f'after the fill: {json.dumps(filled)}')
        fc.settle()

        filesystems = [tierfs, Passthrough(passthrough_bin, data, args.read_only, args.timeout), Ext4(data)]
        results = {fs.name: {} for fs in filesystems}
        stats_log = []
        for rnd in range(args.rounds):
            for fs in filesystems:
                log(f'round {rnd + 1}: {fs.name}')
                r, stats = run_one(fs, mnt, args, seed=10 * rnd + 1)
                for key, figures in r.items():
                    results[fs.name].setdefault(key, []).append(figures)
                if stats:
                    stats_log.append(stats)
                    log(f'round {rnd + 1}: tierfs backend reads during the runs: '
                        f'{stats["backend_reads_during"]}')
        report(results, stats_log, filled, args, data_bytes, device_mib,
               index_bytes_per_entry(args.build))
    finally:
        if os.path.ismount(mnt):
            subprocess.run(['fusermount3', '-u', mnt])
        fc.stop_cluster(cluster, mnt)
        shutil.rmtree(work, ignore_errors=True)


def values(results, name, key, field):
    return [r[field] for r in results.get(name, {}).get(key, [])]


def cell(vals):
    if not vals:
        return ''
    mid = statistics.median(vals)
    fmt = '.1f' if mid < 100 else '.0f'
    spread = f' ({min(vals):{fmt}}-{max(vals):{fmt}})' if len(vals) > 1 else ''
    return f'{mid:{fmt}}{spread}'


def ratio_cell(num, den):
    return ', '.join(f'{a / b:.2f}' for a, b in zip(num, den)) if num and den else ''


def report(results, stats_log, filled, args, data_bytes, device_mib, index_bytes):
    store = 'memstore' if args.memstore else 'BlueStore'
    memory = 'memory cache 128 MiB' if args.memory_cache else '--cache-memory 0'
    print(f'\n{args.files} files of ~{args.file_size >> 10} KiB, {args.readers} readers; '
          f'{args.large} x {args.large_size >> 20} MiB; dataset {data_bytes / 2**20:.0f} MiB; '
          f'cache device {device_mib} MiB, {memory}'
          f'{", --read-only" if args.read_only else ""}; entry/attr timeouts {args.timeout:g} s; '
          f'{store}; {args.rounds} rounds\n')
    names = (TIERFS, PASSTHROUGH, EXT4)
    print('| metric (median of rounds, range) | tierfs | passthrough | ext4 '
          '| tierfs / passthrough, by round | tierfs / ext4, by round |')
    print('|---|---|---|---|---|---|')
    for label, key, field in METRICS:
        t, pt, e = (values(results, n, key, field) for n in names)
        print(f'| {label} | {cell(t)} | {cell(pt)} | {cell(e)} | {ratio_cell(t, pt)} '
              f'| {ratio_cell(t, e)} |')
    print()
    device_entries = filled.get('device_entries')
    print(f'- cache device after the fill: {device_entries} entries, '
          f'{filled.get("device_used_bytes", 0) / 2**20:.0f} MiB used, '
          f'{filled.get("backend_reads")} back-end reads to fill it, '
          f'{filled.get("device_not_admitted")} chunks not admitted at first')
    during = [s['backend_reads_during'] for s in stats_log]
    print(f'- tierfs back-end reads during the measured runs, by round: {during}'
          + (' (all served by the cache)' if not any(during) else ' (NOT all from the cache)'))
    if stats_log:
        print(f'- tierfs cache_stats after the last round: {json.dumps(stats_log[-1]["after"])}')
    if index_bytes is not None:
        print(f'- in-memory index: {index_bytes:.1f} bytes per cached chunk '
              '(RegionCache.TheMemoryIndexTakesAtMost64BytesAnEntry)')


if __name__ == '__main__':
    main()
