"""The datasets of tests/bench/compare.py, made once on the local disk and reused by every run
with the same shape. A dataset directory holds trees and, for each, a manifest of
"<xxh64 hex> <size> <relative path>" lines that the readers (bench_loader, pyloader.py) check
every byte against.

  small/   images: files of an ImageNet-like size distribution (log-normal, mean ~110 KB,
           10 KB to 1 MiB), 500 to a class directory, incompressible (as JPEGs are)
  over/    the same kind of files, 1.5x the disk-cache size: the dataset larger than the cache
  shards/  large files (tar shards) streamed front to back
"""
import math
import os
import random
import shutil

import xxhash

PER_CLASS = 500
MEAN_SIZE = 110_000
SIGMA = 0.5  # ImageNet's JPEGs: median ~100 KB, a long tail of large ones
MIN_SIZE, MAX_SIZE = 10_000, 1 << 20


def image_sizes(total_files=None, total_bytes=None, seed=1):
    """Sizes drawn from the image distribution: `total_files` of them, or until `total_bytes`."""
    rnd = random.Random(seed)
    mu = math.log(MEAN_SIZE) - SIGMA ** 2 / 2
    sizes, acc = [], 0
    while (total_files is not None and len(sizes) < total_files) or \
            (total_bytes is not None and acc < total_bytes):
        n = int(min(MAX_SIZE, max(MIN_SIZE, rnd.lognormvariate(mu, SIGMA))))
        sizes.append(n)
        acc += n
    return sizes


def _manifest_line(data, rel):
    return f'{xxhash.xxh64(data).hexdigest()} {len(data)} {rel}\n'


def _write(path, data, manifest, rel):
    with open(path, 'wb') as f:
        f.write(data)
    manifest.write(_manifest_line(data, rel))


def write_manifest(root, tree):
    """ROOT/TREE.manifest for a tree made some other way (tests/bench/fs_compare.py's), unless
    it is there already."""
    path = os.path.join(root, f'{tree}.manifest')
    if os.path.exists(path):
        return
    with open(path + '.tmp', 'w') as out:
        for d, _, names in sorted(os.walk(os.path.join(root, tree))):
            for name in sorted(names):
                full = os.path.join(d, name)
                with open(full, 'rb') as f:
                    out.write(_manifest_line(f.read(), os.path.relpath(full, root)))
    os.replace(path + '.tmp', path)


def make_images(root, name, sizes):
    with open(os.path.join(root, f'{name}.manifest'), 'w') as manifest:
        for i, n in enumerate(sizes):
            rel = f'{name}/class_{i // PER_CLASS:04d}/img_{i:07d}.jpg'
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            _write(os.path.join(root, rel), os.urandom(n), manifest, rel)


def make_shards(root, count, size):
    block = os.urandom(4 << 20)
    with open(os.path.join(root, 'shards.manifest'), 'w') as manifest:
        os.makedirs(os.path.join(root, 'shards'))
        for i in range(count):
            rel = f'shards/shard_{i:04d}.tar'
            h, written = xxhash.xxh64(), 0
            with open(os.path.join(root, rel), 'wb') as f:
                while written < size:
                    # Distinct blocks (a fresh prefix each), incompressible.
                    part = (os.urandom(64) + block[64:])[:size - written]
                    f.write(part)
                    h.update(part)
                    written += len(part)
            manifest.write(f'{h.hexdigest()} {size} {rel}\n')


def make(root, files, over_bytes, shards, shard_size):
    """Makes the dataset in `root` unless a complete one of this shape is there already."""
    shape = f'{files} {over_bytes} {shards} {shard_size}\n'
    marker = os.path.join(root, '.complete')
    if os.path.exists(marker) and open(marker).read() == shape:
        return
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    make_images(root, 'small', image_sizes(total_files=files, seed=1))
    make_images(root, 'over', image_sizes(total_bytes=over_bytes, seed=2))
    make_shards(root, shards, shard_size)
    with open(marker, 'w') as f:
        f.write(shape)


def manifest_bytes(root, name):
    with open(os.path.join(root, f'{name}.manifest')) as f:
        return sum(int(line.split(' ', 2)[1]) for line in f)


def manifest_files(root, name):
    with open(os.path.join(root, f'{name}.manifest')) as f:
        return sum(1 for _ in f)
