#!/usr/bin/env python3
"""A Python DataLoader-style reader: what PyTorch users see. Worker processes (multiprocessing,
as torch.utils.data.DataLoader's num_workers) each read their share of a shuffled epoch, file by
file with open().read(), and check every file against the manifest (tests/bench/dataset.py).
Prints the same JSON figures as bench_loader; exit 1 when a file was wrong.

Usage: pyloader.py --root DIR --manifest FILE [--readers 8] [--seed 0]
"""
import argparse
import json
import multiprocessing
import random
import sys
import time

import xxhash


def read_batch(args):
    root, batch = args
    latencies, total, bad = [], 0, []
    for digest, size, rel in batch:
        t = time.perf_counter()
        try:
            with open(f'{root}/{rel}', 'rb') as f:
                data = f.read()
        except OSError as e:
            bad.append(f'{rel}: {e.strerror}')
            continue
        latencies.append(time.perf_counter() - t)
        total += len(data)
        if len(data) != size:
            bad.append(f'{rel}: read {len(data)} bytes, expected {size}')
        elif xxhash.xxh64(data).hexdigest() != digest:
            bad.append(f'{rel}: content differs from the manifest\'s hash')
    return latencies, total, bad


def epoch(root, manifest, readers=8, seed=0):
    with open(manifest) as f:
        files = [(h, int(n), rel) for h, n, rel in (line.rstrip('\n').split(' ', 2) for line in f)]
    random.Random(seed).shuffle(files)
    # Batches of 16 handed out in turn, as a DataLoader's sampler does to its workers.
    batches = [(root, files[i:i + 16]) for i in range(0, len(files), 16)]
    with multiprocessing.Pool(readers) as pool:  # workers started before the clock (persistent)
        start = time.perf_counter()
        results = pool.map(read_batch, batches, chunksize=1)
        seconds = time.perf_counter() - start
    latencies = sorted(x for lat, _, _ in results for x in lat)
    total = sum(t for _, t, _ in results)
    bad = [b for _, _, bs in results for b in bs]

    def pct(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 \
            if latencies else 0
    return {'files': len(files), 'bytes': total, 'seconds': seconds,
            'files_per_s': len(files) / seconds, 'mib_per_s': total / seconds / 2**20,
            'p50_ms': pct(0.5), 'p99_ms': pct(0.99), 'bad': len(bad)}, bad


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--root', required=True)
    p.add_argument('--manifest', required=True)
    p.add_argument('--readers', type=int, default=8)
    p.add_argument('--seed', type=int, default=0)
    args = p.parse_args()
    figures, bad = epoch(args.root, args.manifest, args.readers, args.seed)
    for b in bad[:20]:
        print(f'pyloader: {b}', file=sys.stderr)
    print(json.dumps(figures))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
