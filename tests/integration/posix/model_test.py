#!/usr/bin/env python3
"""Model-based random test of a filesystem's namespace and file data.

    python3 model_test.py --mount DIR [--seed N] [--ops 2000] [--tierfs] [--check-every 100]

Random operations (create, write anywhere, truncate, read, unlink, mkdir, rmdir, rename,
symlink, link, and reads/writes through open file descriptors) run on the real filesystem under
a fresh subdirectory of DIR and on an in-memory model of the tree. Each operation's outcome,
success (with its result) or the exact errno, must be what the model predicts from Linux's
rules; every --check-every operations and at the end the whole tree (names, types, sizes,
contents, link counts, symlink targets) must equal the model. A small name alphabet makes
collisions, replacements and invalid renames common.

On a divergence it prints the seed, the operation, what the model expected and what the
filesystem did, and exits 1. --mutate breaks the model on purpose, to check that the test
notices (it must then exit 1).
"""

import argparse
import collections
import ctypes
import errno
import os
import random
import shutil
import stat
import sys
import tempfile
import time

NAMES = ('a', 'b', 'c', 'd')
MAX_DEPTH = 3  # new names are created at most this many directories deep
# Every symlink points under here, so all of them dangle: following one gives ENOENT.
NOWHERE = '/nonexistent-tierfs-model-test'
MAX_HANDLES = 4
MiB = 1 << 20

MUTATIONS = {
    'rename-over-nonempty-dir': 'model lets a directory replace a non-empty directory',
    'rename-into-own-subtree': 'model lets a directory move into its own subtree',
    'truncate-up-ignored': 'model ignores truncates that grow a file',
    'write-past-eof-appends': 'model writes past EOF at EOF instead of leaving a hole',
    'rmdir-nonempty': 'model lets rmdir remove a non-empty directory',
    'unlink-open-file-loses-data': 'model forgets the data of an unlinked file still open',
}
mutation = None  # the one --mutate in force, if any


# -- the model ---------------------------------------------------------------------------------

class File:
    def __init__(self):
        self.data = bytearray()


class Dir:
    def __init__(self):
        self.children = {}


class Symlink:
    def __init__(self, target):
        self.target = target


class Fails(Exception):
    """The model's prediction that the operation fails with one of these errnos."""

    def __init__(self, *codes):
        super().__init__(codes)
        self.codes = set(codes)


def kind(node):
    return {File: 'file', Dir: 'dir', Symlink: 'symlink'}[type(node)]


class Model:
    """The tree as Linux would keep it. Methods check in the kernel's order, raise Fails, or
    change the tree and return the operation's result."""

    def __init__(self, hard_links):
        self.root = Dir()
        self.hard_links = hard_links

    def parent(self, parts):
        """The directory that holds parts[-1], resolving the components before it."""
        node = self.root
        for name in parts[:-1]:
            node = node.children.get(name)
            if node is None or isinstance(node, Symlink):  # a dangling link: ENOENT too
                raise Fails(errno.ENOENT)
            if isinstance(node, File):
                raise Fails(errno.ENOTDIR)
        return node

    def lookup(self, parts):
        parent = self.parent(parts)
        return parent, parent.children.get(parts[-1])

    def followed_file(self, parts):
        """The file that open() or truncate() of parts reaches; they follow symlinks."""
        _, node = self.lookup(parts)
        if node is None or isinstance(node, Symlink):
            raise Fails(errno.ENOENT)
        if isinstance(node, Dir):
            raise Fails(errno.EISDIR)
        return node

    def walk(self, node=None, prefix=()):
        """(parts, node) of every entry below node, parents before children."""
        node = node or self.root
        for name, child in node.children.items():
            yield prefix + (name,), child
            if isinstance(child, Dir):
                yield from self.walk(child, prefix + (name,))

    # -- operations -----------------------------------------------------------------------------

    def create(self, parts, excl, trunc):
        parent, node = self.lookup(parts)
        if node is None:
            parent.children[parts[-1]] = File()
            return None
        if excl:
            raise Fails(errno.EEXIST)
        file = self.followed_file(parts)
        if trunc:
            file.data.clear()
        return None

    def write(self, file, offset, data):
        if not data:
            return 0  # writing nothing past EOF does not extend the file
        if offset > len(file.data):
            if mutation == 'write-past-eof-appends':
                offset = len(file.data)
            file.data.extend(bytes(offset - len(file.data)))
        file.data[offset:offset + len(data)] = data
        return len(data)

    def truncate(self, file, size):
        if size > len(file.data) and mutation == 'truncate-up-ignored':
            return None
        del file.data[size:]
        file.data.extend(bytes(size - len(file.data)))
        return None

    def read(self, parts):
        _, node = self.lookup(parts)
        if isinstance(node, Dir):  # open(O_RDONLY) of a directory works, read() fails
            raise Fails(errno.EISDIR)
        file = self.followed_file(parts)
        return len(file.data), bytes(file.data)

    def unlink(self, parts):
        parent, node = self.lookup(parts)
        if node is None:
            raise Fails(errno.ENOENT)
        if isinstance(node, Dir):
            raise Fails(errno.EISDIR)
        del parent.children[parts[-1]]
        if mutation == 'unlink-open-file-loses-data' and isinstance(node, File):
            node.data.clear()
        return None

    def mkdir(self, parts):
        parent, node = self.lookup(parts)
        if node is not None:
            raise Fails(errno.EEXIST)
        parent.children[parts[-1]] = Dir()
        return None

    def rmdir(self, parts):
        parent, node = self.lookup(parts)
        if node is None:
            raise Fails(errno.ENOENT)
        if not isinstance(node, Dir):
            raise Fails(errno.ENOTDIR)
        if node.children and mutation != 'rmdir-nonempty':
            raise Fails(errno.ENOTEMPTY)
        del parent.children[parts[-1]]
        return None

    def symlink(self, target, parts):
        parent, node = self.lookup(parts)
        if node is not None:
            raise Fails(errno.EEXIST)
        parent.children[parts[-1]] = Symlink(target)
        return None

    def link(self, src, dst):
        """linkat(2) without AT_SYMLINK_FOLLOW: a link to a symlink links the symlink."""
        _, node = self.lookup(src)
        if node is None:
            raise Fails(errno.ENOENT)
        dst_parent, existing = self.lookup(dst)
        if existing is not None:
            raise Fails(errno.EEXIST)
        if isinstance(node, Dir):
            raise Fails(errno.EPERM)
        if not self.hard_links:  # tierfs refuses hard links by design
            raise Fails(errno.EPERM, errno.EOPNOTSUPP)
        dst_parent.children[dst[-1]] = node
        return None

    def rename(self, src, dst, noreplace):
        """The checks of Linux's do_renameat2() and vfs_rename(), in their order."""
        src_parent = self.parent(src)
        dst_parent = self.parent(dst)
        node = src_parent.children.get(src[-1])
        if node is None:
            raise Fails(errno.ENOENT)
        target = dst_parent.children.get(dst[-1])
        if noreplace and target is not None:
            raise Fails(errno.EEXIST)
        if is_proper_prefix(src, dst) and mutation != 'rename-into-own-subtree':
            raise Fails(errno.EINVAL)  # the source is an ancestor of the target
        if is_proper_prefix(dst, src):
            raise Fails(errno.ENOTEMPTY)  # the target is an ancestor of the source
        if target is node:
            return None  # the same file (same name, or two hard links): nothing happens
        if target is not None:
            self.check_replace(node, target)
        del src_parent.children[src[-1]]
        dst_parent.children[dst[-1]] = node
        return None

    def check_replace(self, node, target):
        if isinstance(node, Dir) and not isinstance(target, Dir):
            raise Fails(errno.ENOTDIR)
        if not isinstance(node, Dir) and isinstance(target, Dir):
            raise Fails(errno.EISDIR)
        if isinstance(target, Dir) and target.children:
            if mutation != 'rename-over-nonempty-dir':
                raise Fails(errno.ENOTEMPTY)


def is_proper_prefix(short, long):
    return len(short) < len(long) and long[:len(short)] == short


# -- the real filesystem side ------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_NOREPLACE = -100, 1


def renameat2_noreplace(old, new):
    fn = _libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), RENAME_NOREPLACE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), old)


def pread_all(fd):
    parts, offset = [], 0
    while chunk := os.pread(fd, MiB, offset):
        parts.append(chunk)
        offset += len(chunk)
    return b''.join(parts)


def pwrite_all(fd, data, offset):
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
    return len(data)


def read_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.fstat(fd).st_size, pread_all(fd)
    finally:
        os.close(fd)


def real_tree(path):
    """{name: description} of a real directory, recursively, without following symlinks."""
    tree = {}
    for entry in os.scandir(path):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            tree[entry.name] = ('dir', real_tree(entry.path))
        elif stat.S_ISREG(st.st_mode):
            _, data = read_path(entry.path)
            tree[entry.name] = ('file', st.st_size, data, st.st_nlink)
        elif stat.S_ISLNK(st.st_mode):
            tree[entry.name] = ('symlink', os.readlink(entry.path))
        else:
            tree[entry.name] = ('other', oct(st.st_mode))
    return tree


def model_tree(directory, nlinks):
    tree = {}
    for name, node in directory.children.items():
        if isinstance(node, Dir):
            tree[name] = ('dir', model_tree(node, nlinks))
        elif isinstance(node, File):
            tree[name] = ('file', len(node.data), bytes(node.data), nlinks[id(node)])
        else:
            tree[name] = ('symlink', node.target)
    return tree


def count_links(model):
    counts = collections.Counter()
    for _, node in model.walk():
        counts[id(node)] += 1
    return counts


def describe(entry):
    if entry[0] == 'file':
        return f'file of {entry[1]} bytes, nlink {entry[3]}'
    if entry[0] == 'dir':
        return f'directory of {len(entry[1])} entries'
    return f'{entry[0]} {entry[1]}'


def diff_trees(expected, actual, prefix=''):
    """Differences between the model's tree and the real one, as readable lines."""
    lines = []
    for name in sorted(set(expected) | set(actual)):
        path = prefix + name
        want, got = expected.get(name), actual.get(name)
        if want is None or got is None:
            lines.append(f'{path}: model has {describe(want) if want else "nothing"}, '
                         f'filesystem has {describe(got) if got else "nothing"}')
        elif want[0] == 'dir' and got[0] == 'dir':
            lines.extend(diff_trees(want[1], got[1], path + '/'))
        elif want != got:
            lines.append(f'{path}: model has {describe(want)}, filesystem has {describe(got)}'
                         + content_note(want, got))
    return lines


def content_note(want, got):
    if want[0] != 'file' or got[0] != 'file' or want[2] == got[2]:
        return ''
    for i, (a, b) in enumerate(zip(want[2], got[2])):
        if a != b:
            return f'; content first differs at byte {i}'
    return '; content differs in length'


# -- the random driver -------------------------------------------------------------------------

class Divergence(Exception):
    pass


def outcome_text(outcome):
    status, value = outcome
    if status == 'err':  # the model gives a set of acceptable errnos, the filesystem one
        codes = value if isinstance(value, set) else {value}
        return 'error ' + '/'.join(sorted(errno.errorcode.get(c, str(c)) for c in codes))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bytes):
        return f'success, {value[0]} bytes (st_size), content of {len(value[1])} bytes'
    return f'success ({value!r})' if value is not None else 'success'


def read_note(expected, actual):
    """Where two successful reads differ (their lengths alone may be equal)."""
    if expected[0] != 'ok' or actual[0] != 'ok' or not isinstance(expected[1], tuple):
        return ''
    want, got = expected[1][1], actual[1][1]
    for i, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return f'\n  content first differs at byte {i}: model {a:#04x}, filesystem {b:#04x}'
    return ''


def same_outcome(expected, actual):
    if expected[0] == 'err':
        return actual[0] == 'err' and actual[1] in expected[1]
    return actual == expected


class Runner:
    def __init__(self, root, seed, tierfs):
        self.root = root
        self.rng = random.Random(seed)
        self.model = Model(hard_links=not tierfs)
        self.handles = []  # (fd, File, relative path when opened)
        self.log = collections.deque(maxlen=25)
        self.stats = collections.Counter()
        self.ops = [(self.op_create, 10), (self.op_write, 14), (self.op_truncate, 7),
                    (self.op_read, 8), (self.op_unlink, 7), (self.op_mkdir, 9),
                    (self.op_rmdir, 7), (self.op_rename, 16), (self.op_symlink, 3),
                    (self.op_link, 3), (self.op_open_handle, 3), (self.op_handle_write, 4),
                    (self.op_handle_read, 3), (self.op_handle_truncate, 2),
                    (self.op_close_handle, 2)]

    def real(self, parts):
        return os.path.join(self.root, *parts)

    def step(self):
        functions, weights = zip(*self.ops)
        self.rng.choices(functions, weights)[0]()

    def check(self, description, predict, perform):
        """Run predict() on the model and perform() on the filesystem; they must agree."""
        self.log.append(description)
        try:
            expected = ('ok', predict())
        except Fails as e:
            expected = ('err', e.codes)
        try:
            actual = ('ok', perform())
        except OSError as e:
            actual = ('err', e.errno)
        self.stats['ok' if actual[0] == 'ok' else errno.errorcode.get(actual[1], '?')] += 1
        if not same_outcome(expected, actual):
            raise Divergence(f'{description}\n  model expected: {outcome_text(expected)}\n'
                             f'  filesystem did: {outcome_text(actual)}'
                             + read_note(expected, actual))

    def compare_trees(self, when):
        expected = model_tree(self.model.root, count_links(self.model))
        lines = diff_trees(expected, real_tree(self.root))
        if lines:
            raise Divergence(f'tree comparison {when}:\n  ' + '\n  '.join(lines[:15]))

    # -- choosing arguments ---------------------------------------------------------------------

    def pick_path(self, prefer=None):
        """An existing entry (of type prefer if any), a new name in an existing directory,
        or a random path that may run through files, links or missing directories."""
        entries = list(self.model.walk())
        roll = self.rng.random()
        if entries and roll < 0.55:
            preferred = [p for p, n in entries if prefer is None or isinstance(n, prefer)]
            return self.rng.choice(preferred or [p for p, _ in entries])
        if roll < 0.92:
            dirs = [()] + [p for p, n in entries if isinstance(n, Dir) and len(p) < MAX_DEPTH]
            return self.rng.choice(dirs) + (self.rng.choice(NAMES),)
        return tuple(self.rng.choice(NAMES) for _ in range(self.rng.randint(1, MAX_DEPTH + 1)))

    def pick_offset(self, size):
        roll = self.rng.random()
        if roll < 0.6:
            return self.rng.randint(0, size)
        if roll < 0.97:
            return size + self.rng.randint(1, 20000)  # a hole after the old end
        return self.rng.randint(size, max(size, 3 * MiB))  # far out, across chunk boundaries

    def pick_data(self):
        big = self.rng.random() < 0.1
        return self.rng.randbytes(self.rng.randint(0, 200000 if big else 8192))

    def size_of(self, parts):
        try:
            return len(self.model.followed_file(parts).data)
        except Fails:
            return 0

    # -- operations on paths --------------------------------------------------------------------

    def op_create(self):
        parts = self.pick_path()
        excl, trunc = self.rng.random() < 0.5, self.rng.random() < 0.3
        flags = (os.O_WRONLY | os.O_CREAT | (os.O_EXCL if excl else 0)
                 | (os.O_TRUNC if trunc else 0))
        names = 'O_CREAT' + ('|O_EXCL' if excl else '') + ('|O_TRUNC' if trunc else '')
        self.check(f'open({"/".join(parts)}, {names})',
                   lambda: self.model.create(parts, excl, trunc),
                   lambda: os.close(os.open(self.real(parts), flags, 0o644)))

    def op_write(self):
        parts = self.pick_path(prefer=File)
        offset, data = self.pick_offset(self.size_of(parts)), self.pick_data()

        def predict():
            return self.model.write(self.model.followed_file(parts), offset, data)

        def perform():
            fd = os.open(self.real(parts), os.O_WRONLY)
            try:
                return pwrite_all(fd, data, offset)
            finally:
                os.close(fd)
        self.check(f'pwrite({"/".join(parts)}, {len(data)} bytes at {offset})', predict, perform)

    def op_truncate(self):
        parts = self.pick_path(prefer=File)
        old = self.size_of(parts)
        size = self.pick_offset(old) if self.rng.random() < 0.5 else self.rng.randint(0, old)
        self.check(f'truncate({"/".join(parts)}, {size})',
                   lambda: self.model.truncate(self.model.followed_file(parts), size),
                   lambda: os.truncate(self.real(parts), size))

    def op_read(self):
        parts = self.pick_path(prefer=File)
        self.check(f'read({"/".join(parts)})', lambda: self.model.read(parts),
                   lambda: read_path(self.real(parts)))

    def op_unlink(self):
        parts = self.pick_path()
        self.check(f'unlink({"/".join(parts)})', lambda: self.model.unlink(parts),
                   lambda: os.unlink(self.real(parts)))

    def op_mkdir(self):
        parts = self.pick_path()
        self.check(f'mkdir({"/".join(parts)})', lambda: self.model.mkdir(parts),
                   lambda: os.mkdir(self.real(parts), 0o755))

    def op_rmdir(self):
        parts = self.pick_path(prefer=Dir)
        self.check(f'rmdir({"/".join(parts)})', lambda: self.model.rmdir(parts),
                   lambda: os.rmdir(self.real(parts)))

    def op_symlink(self):
        parts = self.pick_path()
        target = f'{NOWHERE}/{self.rng.choice(NAMES)}'
        self.check(f'symlink({target}, {"/".join(parts)})',
                   lambda: self.model.symlink(target, parts),
                   lambda: os.symlink(target, self.real(parts)))

    def op_link(self):
        src, dst = self.pick_path(prefer=File), self.pick_path()
        self.check(f'link({"/".join(src)}, {"/".join(dst)})', lambda: self.model.link(src, dst),
                   lambda: os.link(self.real(src), self.real(dst), follow_symlinks=False))

    def op_rename(self):
        src = self.pick_path(prefer=Dir if self.rng.random() < 0.4 else None)
        roll = self.rng.random()
        if roll < 0.08:    # into its own subtree: EINVAL
            dst = src + tuple(self.rng.choice(NAMES) for _ in range(self.rng.randint(1, 2)))
        elif roll < 0.14 and len(src) > 1:  # onto one of its ancestors: ENOTEMPTY
            dst = src[:self.rng.randint(1, len(src) - 1)]
        else:
            dst = self.pick_path()
        noreplace = self.rng.random() < 0.15
        call = 'renameat2(NOREPLACE)' if noreplace else 'rename'

        def perform():
            if noreplace:
                return renameat2_noreplace(self.real(src), self.real(dst))
            return os.rename(self.real(src), self.real(dst))
        self.check(f'{call}({"/".join(src)}, {"/".join(dst)})',
                   lambda: self.model.rename(src, dst, noreplace), perform)

    # -- operations through open file descriptors (the file may since be renamed or unlinked) --

    def op_open_handle(self):
        if len(self.handles) >= MAX_HANDLES:
            return self.op_close_handle()
        parts = self.pick_path(prefer=File)
        file, opened = [], []

        def predict():
            file.append(self.model.followed_file(parts))

        def perform():
            opened.append(os.open(self.real(parts), os.O_RDWR))
        try:
            self.check(f'open({"/".join(parts)}, O_RDWR) -> handle {len(self.handles)}',
                       predict, perform)
        except Divergence:
            for fd in opened:
                os.close(fd)
            raise
        if opened:
            self.handles.append((opened[0], file[0], '/'.join(parts)))
        return None

    def pick_handle(self):
        return self.rng.randrange(len(self.handles)) if self.handles else None

    def op_handle_write(self):
        index = self.pick_handle()
        if index is None:
            return self.op_open_handle()
        fd, file, opened_as = self.handles[index]
        offset, data = self.pick_offset(len(file.data)), self.pick_data()
        self.check(f'pwrite(handle {index} opened as {opened_as}, {len(data)} bytes at {offset})',
                   lambda: self.model.write(file, offset, data),
                   lambda: pwrite_all(fd, data, offset))
        return None

    def op_handle_read(self):
        index = self.pick_handle()
        if index is None:
            return self.op_open_handle()
        fd, file, opened_as = self.handles[index]
        self.check(f'read(handle {index} opened as {opened_as})',
                   lambda: (len(file.data), bytes(file.data)),
                   lambda: (os.fstat(fd).st_size, pread_all(fd)))
        return None

    def op_handle_truncate(self):
        index = self.pick_handle()
        if index is None:
            return self.op_open_handle()
        fd, file, opened_as = self.handles[index]
        size = self.rng.randint(0, len(file.data) + 30000)
        self.check(f'ftruncate(handle {index} opened as {opened_as}, {size})',
                   lambda: self.model.truncate(file, size), lambda: os.ftruncate(fd, size))
        return None

    def op_close_handle(self):
        index = self.pick_handle()
        if index is None:
            return None
        fd, _, opened_as = self.handles.pop(index)
        self.check(f'close(handle {index} opened as {opened_as})', lambda: None,
                   lambda: os.close(fd))
        return None

    def close_all(self):
        while self.handles:
            os.close(self.handles.pop()[0])


def run(args, seed):
    """Run the test once in a fresh directory; return True if the filesystem matched."""
    work = tempfile.mkdtemp(prefix=f'model.{seed}.', dir=args.mount)
    runner = Runner(work, seed, args.tierfs)
    ok = False
    done = 0
    try:
        for done in range(1, args.ops + 1):
            runner.step()
            if done % args.check_every == 0:
                runner.compare_trees(f'after operation {done}')
        runner.close_all()
        runner.compare_trees('at the end')
        ok = True
    except Divergence as e:
        mutated = f', mutation {mutation}' if mutation else ''
        print(f'DIVERGENCE at operation {done} (seed {seed}{mutated}):\n{e}', file=sys.stderr)
        print('last operations:\n  ' + '\n  '.join(runner.log), file=sys.stderr)
        flags = (' --tierfs' if args.tierfs else '') + (f' --mutate {mutation}' if mutation else '')
        print(f'reproduce: python3 {sys.argv[0]} --mount {args.mount} --seed {seed} '
              f'--ops {done}{flags}', file=sys.stderr)
    finally:
        runner.close_all()
        if ok or not args.keep:
            shutil.rmtree(work)
        else:
            print(f'kept the tree for inspection: {work}', file=sys.stderr)
    outcomes = ', '.join(f'{k} {v}' for k, v in runner.stats.most_common())
    print(f'model_test: seed {seed}: {done} operations ({outcomes})', file=sys.stderr)
    return ok


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], allow_abbrev=False)
    parser.add_argument('--mount', required=True, help='directory to test in')
    parser.add_argument('--seed', type=int, help='random seed (default: a new one, printed)')
    parser.add_argument('--ops', type=int, default=2000, help='operations per run (2000)')
    parser.add_argument('--check-every', type=int, default=100,
                        help='compare the whole tree every N operations (100)')
    parser.add_argument('--tierfs', action='store_true',
                        help='expect hard links to be refused (EPERM/EOPNOTSUPP)')
    parser.add_argument('--keep', action='store_true', help='keep the tree after a divergence')
    parser.add_argument('--mutate', choices=sorted(MUTATIONS),
                        help='break the model on purpose; the run must then fail')
    return parser.parse_args(argv)


def main(argv):
    global mutation
    args = parse_args(argv[1:])
    args.mount = os.path.abspath(args.mount)
    if not os.path.isdir(args.mount):
        sys.exit(f'model_test: {args.mount} is not a directory')
    if os.path.lexists(NOWHERE):
        sys.exit(f'model_test: {NOWHERE} exists; the dangling symlinks need it not to')
    mutation = args.mutate
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**9)
    start = time.monotonic()
    ok = run(args, seed)
    print(f'model_test: {"passed" if ok else "FAILED"} in {time.monotonic() - start:.1f} s '
          f'(seed {seed})', file=sys.stderr)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
