"""Shared pieces of the POSIX suite: configuration, the per-test base class, helpers.

The suite is black-box: it only uses the path it is given, so the same code runs against a
local directory (where everything must pass) and against a tierfs FUSE mount.
"""

import ctypes
import errno
import os
import random
import re
import shutil
import stat
import tempfile
import time
import unittest

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# Filled in by posix_suite.py from the command line before any test runs.
CONFIG = {
    'mount': None,         # directory under test
    'tierfs': False,       # expect tierfs behaviour where it differs (no hard links)
    'other_users': False,  # run the tests that switch to uid/gid 65534
    'big_size': 2 * GiB,   # bytes written by the big-file test
}

# Lines (e.g. throughput figures) printed after the unittest summary.
NOTES = []

NOBODY = 65534
# How tierfs may refuse a hard link (ENOTSUP and EOPNOTSUPP are the same number on Linux).
LINK_REFUSED = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP}


def parse_size(text):
    """'4096', '64K', '2G', '1GiB' -> bytes (binary units)."""
    match = re.fullmatch(r'\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*', text, re.IGNORECASE)
    if not match:
        raise ValueError(f'bad size {text!r} (examples: 4096, 64M, 2G)')
    shift = {'': 0, 'K': 10, 'M': 20, 'G': 30, 'T': 40}[match.group(2).upper()]
    return int(match.group(1)) << shift


def errname(code):
    return errno.errorcode.get(code, str(code))


def errnames(codes):
    return '/'.join(sorted({errname(c) for c in codes}))


def pattern(size, seed):
    """Reproducible pseudo-random bytes; a different seed gives different bytes."""
    return random.Random(seed).randbytes(size)


class BlockStream:
    """Incompressible 1 MiB blocks at ~1 GB/s (os.urandom alone manages ~200 MB/s here).

    Block i is the XOR of two different blocks of a random pool, a different pair for every
    i below 64*63, XORed with i too so that no two blocks are ever equal: no compressor or
    deduplication can shrink the stream.
    """

    POOL = 64

    def __init__(self, block_size=MiB):
        self.block_size = block_size
        self.pool = [int.from_bytes(os.urandom(block_size), 'little') for _ in range(self.POOL)]

    def block(self, i):
        first = i % self.POOL
        second = (first + 1 + (i // self.POOL) % (self.POOL - 1)) % self.POOL
        value = self.pool[first] ^ self.pool[second] ^ i
        return value.to_bytes(self.block_size, 'little')


def write_all(fd, data, offset=None):
    """Write all of data (a regular file should take it in one call; loop anyway)."""
    view = memoryview(data)
    while view:
        if offset is None:
            n = os.write(fd, view)
        else:
            n = os.pwrite(fd, view, offset)
            offset += n
        if n <= 0:
            raise OSError(errno.EIO, f'write returned {n}')
        view = view[n:]


def pread_exact(fd, size, offset):
    """Read size bytes at offset, looping over short reads; fewer only at end of file."""
    parts = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b''.join(parts)


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def read_file(path):
    with open(path, 'rb', buffering=0) as f:
        return f.read()


def first_difference(actual, expected):
    """Human description of where two byte strings differ, or None if equal."""
    if actual == expected:
        return None
    for i, (a, b) in enumerate(zip(actual, expected)):
        if a != b:
            return f'first difference at byte {i}: got {a:#04x}, expected {b:#04x}'
    return f'length {len(actual)}, expected {len(expected)} (common prefix equal)'


_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1


def have_renameat2():
    return hasattr(_libc, 'renameat2')


def renameat2(old, new, flags):
    """renameat2(2) from libc; Python's os module has no way to pass flags."""
    fn = _libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), old, None, new)


def run_in_child(action, uid=None, gid=None):
    """Run action() in a forked child, optionally as uid/gid: ('ok', bytes) or ('err', errno).

    The child reports through a pipe: b'OK' + what action returned if that is bytes (other
    results are dropped), or b'ER' + the errno of an OSError. Anything else
    (an unexpected exception, a crash) raises AssertionError in the parent with the detail.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into the test runner, always os._exit
        try:
            os.close(read_end)
            if gid is not None:
                os.setgroups([])
                os.setgid(gid)
            if uid is not None:
                os.setuid(uid)
            try:
                result = action()
                payload = b'OK' + (result if isinstance(result, bytes) else b'')
            except OSError as e:
                payload = b'ER' + str(e.errno).encode()
        except BaseException as e:  # noqa: BLE001 - reported to the parent verbatim
            payload = b'EX' + repr(e).encode()
        try:
            write_all(write_end, payload)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, 'rb') as pipe:
        out = pipe.read()
    _, status = os.waitpid(pid, 0)
    if out[:2] == b'OK':
        return 'ok', out[2:]
    if out[:2] == b'ER':
        return 'err', int(out[2:])
    raise AssertionError(f'child process failed (wait status {status}): {out[2:]!r}')


def remove_tree(path):
    """rm -rf that first restores write/search permission a test may have taken away."""
    if not os.path.lexists(path):
        return
    os.chmod(path, 0o755)
    for dirpath, dirnames, _ in os.walk(path):  # top-down: a dir is fixed before it is entered
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, 0o755)
    shutil.rmtree(path)


class FsTestCase(unittest.TestCase):
    """Gives each test a fresh directory under the mount, removed (and checked gone) after."""

    def setUp(self):
        mount = CONFIG['mount']
        if not mount:
            raise unittest.SkipTest('run through posix_suite.py --mount DIR')
        name = self.id().rsplit('.', 1)[-1]
        self.dir = tempfile.mkdtemp(prefix=f'{name}.', dir=mount)
        self.addCleanup(self._remove_dir)

    def _remove_dir(self):
        remove_tree(self.dir)
        # A filesystem that "removes" but keeps the entry would leak into later tests.
        self.assertFalse(os.path.lexists(self.dir), f'{self.dir} still exists after rm -rf')

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    # -- assertions ---------------------------------------------------------------------------

    def assertErrno(self, expected, what, fn, *args, **kwargs):
        """Assert fn(*args) fails with an errno in expected (an int or a set); return the error.

        what names the operation and the path, for the failure message.
        """
        codes = {expected} if isinstance(expected, int) else set(expected)
        try:
            result = fn(*args, **kwargs)
        except OSError as e:
            if e.errno in codes:
                return e
            self.fail(f'{what}: expected {errnames(codes)}, got {errname(e.errno)} ({e})')
        if fn is os.open:
            os.close(result)
        self.fail(f'{what}: expected {errnames(codes)}, but it succeeded')

    def assertBytes(self, actual, expected, what):
        """Compare contents without dumping megabytes into the failure message."""
        diff = first_difference(actual, expected)
        if diff:
            self.fail(f'{what}: content differs, {diff}')

    def assertFileContent(self, path, expected):
        self.assertBytes(read_file(path), expected, f'read of {path}')
        size = os.stat(path).st_size
        self.assertEqual(size, len(expected), f'stat {path}: st_size')

    def assertMissing(self, path, why):
        self.assertFalse(os.path.lexists(path), f'{path} exists but should not: {why}')

    def assertNames(self, directory, expected):
        """listdir(directory) returns exactly expected: no extra, missing or repeated names."""
        names = os.listdir(directory)
        self.assertEqual(len(names), len(set(names)), f'listdir {directory}: repeated names')
        missing = set(expected) - set(names)
        extra = set(names) - set(expected)
        self.assertFalse(missing or extra,
                         f'listdir {directory}: missing {sorted(missing)[:10]}, '
                         f'extra {sorted(extra)[:10]}')

    def wait_for_clock_tick(self):
        """Sleep past the kernel's coarse timestamp granularity so a new ctime/mtime differs."""
        time.sleep(0.05)


def mode_of(path, follow=True):
    st = os.stat(path) if follow else os.lstat(path)
    return stat.S_IMODE(st.st_mode)


def current_umask():
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask
