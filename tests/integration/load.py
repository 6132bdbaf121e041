#!/usr/bin/env python3
"""Load on a tierfs mount: every byte read or written is checked, and the daemon's memory is
watched throughout.

1. 64 readers and WRITERS writers for TIERFS_LOAD_SECONDS: readers read whole files and random
   ranges of a dataset (each file's pages dropped from the page cache first, so the reads reach
   the daemon); writers create, overwrite, append to, rename, fsync and unlink files of their own
   and read them back. Any error or wrong byte fails the test.
2. 10,000 files open at once, each written through its own descriptor; closed; read back.
3. A directory of TIERFS_LOAD_ENTRIES entries (made by tierfs_test_populate straight into the
   volume), listed and every entry statted through the mount.

The daemon's peak RSS (VmHWM) through 1 and 2 must stay within its idle RSS at the start plus
BUDGET, the memory its config lets it hold: chunk cache, region buffers, read-ahead, back-end
reads in flight, and the unflushed bytes of each writer's file. What 3 adds is the daemon's node
per inode the kernel holds, which no config key bounds: it is printed per inode and held to
PER_INODE_LIMIT.

Usage: load.py MOUNT DAEMON_PID BUDGET_BYTES WRITERS POPULATE NAMESPACE
"""
import hashlib
import os
import random
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

MNT, PID, BUDGET, WRITERS, POPULATE, NSPACE = sys.argv[1:7]
PID, BUDGET, WRITERS = int(PID), int(BUDGET), int(WRITERS)
SECONDS = float(os.environ.get('TIERFS_LOAD_SECONDS', '60'))
ENTRIES = int(os.environ.get('TIERFS_LOAD_ENTRIES', '1000000'))
# 0 under a sanitizer, whose shadow memory is no measure of the daemon's: figures printed only.
MEMORY_CHECKS = os.environ.get('TIERFS_LOAD_MEMORY_CHECKS', '1') != '0'
READERS = 64
OPEN_FILES = 10_000
PER_INODE_LIMIT = 1024  # bytes of daemon memory per inode the kernel holds
MiB = 1 << 20


def fail(msg):
    print(f'FAIL: {msg}', file=sys.stderr, flush=True)
    os._exit(1)


def status_bytes(field):
    with open(f'/proc/{PID}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1]) * 1024
    fail(f'no {field} in /proc/{PID}/status: did the daemon die?')


def content(seed, size):
    return random.Random(seed).randbytes(size)


class Errors:
    """The first error of any thread fails the test once every thread has stopped."""

    def __init__(self):
        self.lock = threading.Lock()
        self.first = None
        self.stop = threading.Event()

    def report(self, msg):
        with self.lock:
            if self.first is None:
                self.first = msg
        self.stop.set()

    def check(self, phase):
        if self.first is not None:
            fail(f'{phase}: {self.first}')


def read_whole(path):
    with open(path, 'rb') as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        return f.read()


# ---------------------------------------------------------------- 1. readers and writers
def make_dataset(root, rng):
    os.mkdir(root)
    files = {}
    for i in range(32):
        size = rng.choice([rng.randrange(1, 256 << 10), rng.randrange(MiB, 12 * MiB)])
        files[f'{root}/f{i:02}'] = content(i, size)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda kv: open(kv[0], 'wb').write(kv[1]), files.items()))
    return files


def reader(n, files, deadline, errors, counts):
    rng = random.Random(1000 + n)
    names = sorted(files)
    reads = nbytes = 0
    while time.monotonic() < deadline and not errors.stop.is_set():
        path = rng.choice(names)
        want = files[path]
        try:
            if rng.random() < 0.3:
                got = read_whole(path)
                if hashlib.sha256(got).digest() != hashlib.sha256(want).digest():
                    return errors.report(f'reader {n}: {path} read whole: {len(got)} bytes, wrong')
            else:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    for _ in range(8):
                        off = rng.randrange(len(want))
                        got = os.pread(fd, rng.randrange(1, 2 * MiB), off)
                        if got != want[off:off + len(got)] or not got:
                            return errors.report(f'reader {n}: {path} at {off}: wrong bytes')
                finally:
                    os.close(fd)
            reads += 1
            nbytes += len(got)
        except OSError as e:
            return errors.report(f'reader {n}: {path}: {e}')
    counts[n] = (reads, nbytes)


class Writer:
    """Files of one writer, and what each must hold."""

    def __init__(self, n, root, errors):
        self.n, self.dir, self.errors = n, f'{root}/w{n}', errors
        self.rng = random.Random(2000 + n)
        self.model = {}
        self.ops = self.written = 0
        os.mkdir(self.dir)

    def new_name(self):
        return f'{self.dir}/file{self.ops}'

    def create(self):
        path = self.new_name()
        data = content(self.rng.randrange(1 << 30), self.rng.randrange(0, 6 * MiB))
        with open(path, 'wb') as f:
            pos = 0
            while pos < len(data):  # pieces of every size, as applications write
                step = self.rng.choice([4096, 65536, 1 << 20, self.rng.randrange(1, 3 << 20)])
                f.write(data[pos:pos + step])
                pos += step
            if self.rng.random() < 0.5:
                f.flush()
                os.fsync(f.fileno())
        self.model[path] = data
        self.written += len(data)

    def overwrite(self, path):
        data = bytearray(self.model[path])
        off = self.rng.randrange(len(data) + 1)
        piece = content(self.rng.randrange(1 << 30), self.rng.randrange(1, 2 * MiB))
        with open(path, 'r+b') as f:
            f.seek(off)
            f.write(piece)
        data[off:off + len(piece)] = piece
        self.model[path] = bytes(data)
        self.written += len(piece)

    def append(self, path):
        piece = content(self.rng.randrange(1 << 30), self.rng.randrange(1, MiB))
        with open(path, 'ab') as f:
            f.write(piece)
            os.fsync(f.fileno())
        self.model[path] += piece
        self.written += len(piece)

    def rename(self, path):
        target = self.new_name() + '.moved'
        os.rename(path, target)
        self.model[target] = self.model.pop(path)

    def unlink(self, path):
        os.unlink(path)
        del self.model[path]

    def verify(self, path):
        got = read_whole(path)
        if got != self.model[path]:
            raise AssertionError(f'{path}: {len(got)} bytes read, {len(self.model[path])} written')

    def run(self, deadline):
        try:
            while time.monotonic() < deadline and not self.errors.stop.is_set():
                self.ops += 1
                if len(self.model) < 4 or self.rng.random() < 0.25:
                    self.create()
                    continue
                path = self.rng.choice(sorted(self.model))
                op = self.rng.choice([self.overwrite, self.append, self.rename, self.unlink,
                                      self.verify, self.verify])
                op(path)
            for path in self.model:
                self.verify(path)
            if sorted(os.listdir(self.dir)) != sorted(os.path.basename(p) for p in self.model):
                raise AssertionError(f'{self.dir} lists {sorted(os.listdir(self.dir))}')
        except (OSError, AssertionError) as e:
            self.errors.report(f'writer {self.n}, op {self.ops}: {e}')


def readers_and_writers():
    rng = random.Random(7)
    files = make_dataset(f'{MNT}/dataset', rng)
    errors = Errors()
    deadline = time.monotonic() + SECONDS
    counts = {}
    writers = [Writer(n, MNT, errors) for n in range(WRITERS)]
    threads = [threading.Thread(target=reader, args=(n, files, deadline, errors, counts))
               for n in range(READERS)]
    threads += [threading.Thread(target=w.run, args=(deadline,)) for w in writers]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors.check('readers and writers')
    elapsed = time.monotonic() - start
    reads = sum(c[0] for c in counts.values())
    read_bytes = sum(c[1] for c in counts.values())
    print(f'load: {READERS} readers, {WRITERS} writers for {elapsed:.0f} s: {reads} reads '
          f'({read_bytes / MiB:.0f} MiB, {read_bytes / MiB / elapsed:.0f} MiB/s) all correct; '
          f'{sum(w.ops for w in writers)} writer operations ({sum(w.written for w in writers) / MiB:.0f} '
          f'MiB written), every file read back correct', flush=True)


# ---------------------------------------------------------------- 2. many open files
def populate(directory, count, prefix):
    ino = os.stat(directory).st_ino
    start = time.monotonic()
    subprocess.run([POPULATE, NSPACE, str(ino), str(count), prefix], check=True,
                   stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def many_open_files():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < OPEN_FILES + 100:
        fail(f'RLIMIT_NOFILE hard limit {hard} is below {OPEN_FILES + 100}')
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    directory = f'{MNT}/open'
    os.mkdir(directory)
    populate(directory, OPEN_FILES, 'o')
    names = [f'{directory}/o{i:09}' for i in range(OPEN_FILES)]
    fds = [os.open(name, os.O_WRONLY) for name in names]
    for i, fd in enumerate(fds):
        os.write(fd, f'file {i} of {OPEN_FILES}\n'.encode())
    open_rss = status_bytes('VmRSS')
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(os.close, fds))

    def check(i):
        want = f'file {i} of {OPEN_FILES}\n'.encode()
        got = read_whole(names[i])
        return None if got == want else f'{names[i]}: {got!r}'

    with ThreadPoolExecutor(16) as pool:
        wrong = [w for w in pool.map(check, range(OPEN_FILES)) if w]
    if wrong:
        fail(f'{len(wrong)} of the {OPEN_FILES} files open at once hold wrong bytes: {wrong[:3]}')
    print(f'open files: {OPEN_FILES} open at once and written, closed and read back correct; '
          f'daemon RSS with all open {open_rss / MiB:.0f} MiB', flush=True)


# ---------------------------------------------------------------- 3. a huge directory
def huge_directory():
    directory = f'{MNT}/big'
    os.mkdir(directory)
    made = populate(directory, ENTRIES, 'e')
    start = time.monotonic()
    count = 0
    expected = (f'e{i:09}' for i in range(ENTRIES))
    for name in sorted(os.listdir(directory)):
        if name != next(expected, None):
            fail(f'{directory}: entry {count} is {name!r}, not the one made')
        count += 1
    listed = time.monotonic() - start
    if count != ENTRIES:
        fail(f'{directory} lists {count} entries, not {ENTRIES}')
    # Statted while listed, as `ls -l` and `find -ls` do: the kernel then asks for the
    # attributes with the names (readdirplus) instead of a lookup per name.
    start = time.monotonic()
    statted = 0
    with os.scandir(directory) as it:
        for entry in it:
            st = entry.stat(follow_symlinks=False)
            if st.st_size != 0 or (st.st_mode & 0o170777) != 0o100644:
                fail(f'{entry.path}: size {st.st_size}, mode {oct(st.st_mode)}')
            statted += 1
    if statted != ENTRIES:
        fail(f'{directory}: {statted} entries statted, not {ENTRIES}')
    statted = time.monotonic() - start
    print(f'big directory: {ENTRIES} entries (made in {made:.0f} s) listed in {listed:.1f} s '
          f'({ENTRIES / listed:.0f}/s), every entry statted in {statted:.1f} s '
          f'({ENTRIES / statted:.0f}/s); daemon RSS after {status_bytes("VmRSS") / MiB:.0f} MiB',
          flush=True)


class RssWatch(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0

    def run(self):
        while True:
            self.peak = max(self.peak, status_bytes('VmRSS'))
            time.sleep(0.5)


def main():
    idle = status_bytes('VmRSS')
    watch = RssWatch()
    watch.start()
    readers_and_writers()
    many_open_files()
    peak = status_bytes('VmHWM')
    print(f'daemon memory: idle {idle / MiB:.0f} MiB, peak {peak / MiB:.0f} MiB (sampled '
          f'{watch.peak / MiB:.0f} MiB), budget {BUDGET / MiB:.0f} MiB above idle: peak - idle = '
          f'{(peak - idle) / MiB:.0f} MiB', flush=True)
    if not MEMORY_CHECKS:
        print('daemon memory: not checked (TIERFS_LOAD_MEMORY_CHECKS=0)', flush=True)
    elif peak > idle + BUDGET:
        fail(f'the daemon peaked at {peak / MiB:.0f} MiB, over idle {idle / MiB:.0f} MiB + '
             f'budget {BUDGET / MiB:.0f} MiB')
    # The daemon keeps a node for every inode the kernel holds (until the kernel forgets it):
    # memory no config key bounds. Measured and held to a bound per inode, separately.
    before = status_bytes('VmRSS')
    huge_directory()
    grown = max(0, status_bytes('VmRSS') - before)
    per_inode = grown / ENTRIES
    print(f'daemon memory per inode the kernel holds: {per_inode:.0f} bytes '
          f'({grown / MiB:.0f} MiB more after listing and statting {ENTRIES} entries)', flush=True)
    if MEMORY_CHECKS and per_inode > PER_INODE_LIMIT:
        fail(f'{per_inode:.0f} bytes per inode known, over {PER_INODE_LIMIT}')


main()
