"""The workloads of tests/bench/fs_compare.py, each run against a mount point and returning its
figures. Kept apart from the orchestration so that each can also be run by hand:

    python3 fs_workloads.py small MOUNT_DIR [READERS]     shuffled epoch of the small files
    python3 fs_workloads.py large MOUNT_DIR               stream the large files one by one
    python3 fs_workloads.py walk MOUNT_DIR                recursive lstat of the tree
"""
import multiprocessing
import os
import random
import sys
import time


def _read_whole(path, buf_size=1 << 20):
    fd = os.open(path, os.O_RDONLY)
    try:
        n = 0
        while True:
            chunk = os.read(fd, buf_size)
            if not chunk:
                return n
            n += len(chunk)
    finally:
        os.close(fd)


def _read_batch(paths):
    latencies, total = [], 0
    for p in paths:
        t = time.perf_counter()
        total += _read_whole(p)
        latencies.append(time.perf_counter() - t)
    return latencies, total


def list_files(root):
    out = []
    for d, _, names in os.walk(root):
        out.extend(os.path.join(d, n) for n in names)
    return sorted(out)


def small_epoch(root, readers=8, seed=0):
    """Every file once, in a shuffled order, by `readers` processes (as a DataLoader does)."""
    files = list_files(root)
    random.Random(seed).shuffle(files)
    batches = [files[i::readers] for i in range(readers)]
    start = time.perf_counter()
    with multiprocessing.Pool(readers) as pool:
        results = pool.map(_read_batch, batches)
    elapsed = time.perf_counter() - start
    latencies = sorted(l for lat, _ in results for l in lat)
    total = sum(t for _, t in results)
    return {'files': len(files), 'seconds': elapsed, 'files_per_s': len(files) / elapsed,
            'mib_per_s': total / elapsed / 2**20,
            'p99_ms': latencies[int(len(latencies) * 0.99)] * 1000 if latencies else 0}


def large_stream(root):
    """Each large file read front to back, one after another."""
    files = list_files(root)
    start = time.perf_counter()
    total = sum(_read_whole(p) for p in files)
    elapsed = time.perf_counter() - start
    return {'files': len(files), 'seconds': elapsed, 'mib_per_s': total / elapsed / 2**20}


def checkpoint(path, size, block=4 << 20):
    """A checkpoint: `size` bytes of incompressible data written and fsynced."""
    data = os.urandom(block)
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        written = 0
        while written < size:
            written += os.write(fd, data[:min(block, size - written)])
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - start
    return {'seconds': elapsed, 'mib_per_s': size / elapsed / 2**20}


def stat_walk(root):
    """A recursive walk that lstats every entry (find, du, a dataset index)."""
    start = time.perf_counter()
    n = 0
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                st = os.lstat(e.path)
                n += 1
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                del st
    elapsed = time.perf_counter() - start
    return {'entries': n, 'seconds': elapsed, 'entries_per_s': n / elapsed}


if __name__ == '__main__':
    what, mount = sys.argv[1], sys.argv[2]
    if what == 'small':
        print(small_epoch(mount, int(sys.argv[3]) if len(sys.argv) > 3 else 8))
    elif what == 'large':
        print(large_stream(mount))
    elif what == 'walk':
        print(stat_walk(mount))
    else:
        sys.exit(__doc__)
