#!/usr/bin/env python3
"""What metrics and the sizing advisor cost on the hot path (issue 6): warm reads with both on
(and Prometheus-style scrapes every second) against both off, side by side, in rounds.

Every read is served from tierfs's memory chunk cache (the dataset fits, and is read once through
the mount before measuring) with the kernel's page cache dropped, so each read is a FUSE request
that the daemon answers from memory: the path where a per-request cost shows most. The two
configurations take turns within each round (this machine drifts); ratios are printed round by
round. The back end is the dir store: nothing is fetched while measuring.

Usage: tests/bench/metrics_overhead.py [--files 4000] [--file-size 110K] [--large-size 1G]
         [--rounds 4] [--epochs 3] [--build build]
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, HERE)
import fs_compare as fc  # noqa: E402
import fs_workloads as wl  # noqa: E402

log = fc.log


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def config(store, memory, on, port):
    return (f'[backend]\ntype = "dir"\n[backend.dir]\npath = "{store}"\n'
            f'[cache]\nmemory_size = "{memory}"\n'
            f'[advisor]\nenabled = {str(on).lower()}\n'
            f'[metrics]\nenabled = {str(on).lower()}\naddress = "127.0.0.1:{port}"\n')


class Scraper(threading.Thread):
    """Scrapes the endpoint every second, as Prometheus would."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.url, self.stop, self.scrapes = f'http://127.0.0.1:{port}/metrics', False, 0

    def run(self):
        while not self.stop:
            urllib.request.urlopen(self.url).read()
            self.scrapes += 1
            time.sleep(1)


def repeated(workload, epochs, key):
    """The workload `epochs` times, the page cache dropped before each; the mean of `key`."""
    values = []
    for _ in range(epochs):
        fc.drop_caches()
        values.append(workload()[key])
    return statistics.mean(values)


def cpu_seconds(pid):
    """User and system CPU time of a process so far."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def measure(binary, cfg, mnt, on, port, epochs):
    proc = fc.mount_with_config(binary, cfg, mnt)
    scraper = Scraper(port) if on else None
    try:
        wl.small_epoch(mnt + '/small')  # fills the memory cache
        wl.large_stream(mnt + '/large')
        if scraper:
            scraper.start()
        cpu = cpu_seconds(proc.pid)
        small_fps = repeated(lambda: wl.small_epoch(mnt + '/small'), epochs, 'files_per_s')
        # The daemon's CPU per small file: steadier than throughput on a noisy machine.
        small_cpu_us = (cpu_seconds(proc.pid) - cpu) / (epochs * len(wl.list_files(mnt + '/small'))) * 1e6
        small_p99 = repeated(lambda: wl.small_epoch(mnt + '/small'), 1, 'p99_ms')
        large_mib = repeated(lambda: wl.large_stream(mnt + '/large'), epochs, 'mib_per_s')
    finally:
        if scraper:
            scraper.stop = True
        subprocess.run(['fusermount3', '-u', mnt], check=True)
        proc.wait(timeout=600)
    return {'small_files_per_s': small_fps, 'small_p99_ms': small_p99, 'large_mib_per_s': large_mib,
            'daemon_cpu_us_per_file': small_cpu_us, 'scrapes': scraper.scrapes if scraper else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--files', type=int, default=4000)
    ap.add_argument('--file-size', type=fc.size_arg, default='110K')
    ap.add_argument('--large-size', type=fc.size_arg, default='1G')
    ap.add_argument('--rounds', type=int, default=4)
    ap.add_argument('--epochs', type=int, default=3, help='epochs per measurement (averaged)')
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    args = ap.parse_args()
    binary = os.path.join(args.build, 'tools', 'tierfs')
    work = tempfile.mkdtemp(prefix='tierfs-metrics-bench-')
    try:
        data, store, mnt = (os.path.join(work, d) for d in ('data', 'store', 'mnt'))
        os.makedirs(mnt)
        fc.make_dataset(data, args.files, args.file_size, 1, args.large_size)
        memory = f'{(args.files * args.file_size + args.large_size) * 3 // 2 >> 20}M'
        port = free_port()
        cfgs = {}
        for on in (False, True):
            cfgs[on] = os.path.join(work, f'{"on" if on else "off"}.toml')
            with open(cfgs[on], 'w') as f:
                f.write(config(store, memory, on, port))
        subprocess.run([binary, 'mkfs', '--config', cfgs[False]], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([binary, 'import', '--config', cfgs[False], data, '/'], check=True,
                       stdout=subprocess.DEVNULL)
        results = {False: [], True: []}
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for on in order:
                res = measure(binary, cfgs[on], mnt, on, port, args.epochs)
                results[on].append(res)
                log(f'round {r + 1} metrics+advisor {"on " if on else "off"}: {res}')
        report(results, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(results, args):
    print(f'\n{args.files} files of {args.file_size >> 10} KiB (8 readers) and one file of '
          f'{args.large_size >> 20} MiB, from the memory cache, page cache dropped; '
          f'{args.rounds} rounds of {args.epochs} epochs\n')
    print('| metric | off (median) | on (median) | on / off, round by round |')
    print('|---|---|---|---|')
    for key, name in (('small_files_per_s', 'small files/s'), ('small_p99_ms', 'small p99 ms'),
                      ('daemon_cpu_us_per_file', 'daemon CPU us per small file'),
                      ('large_mib_per_s', 'large MiB/s')):
        off = [r[key] for r in results[False]]
        on = [r[key] for r in results[True]]
        ratios = ', '.join(f'{b / a:.3f}' for a, b in zip(off, on))
        print(f'| {name} | {statistics.median(off):.1f} | {statistics.median(on):.1f} | '
              f'{ratios} (median {statistics.median(b / a for a, b in zip(off, on)):.3f}) |')
    print(f'\nscrapes during the "on" runs: {[r["scrapes"] for r in results[True]]}')


if __name__ == '__main__':
    main()
