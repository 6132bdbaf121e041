"""Real programs and load: tar -x of a real tree, a git workflow, 16 concurrent readers."""

import hashlib
import os
import random
import shutil
import stat
import subprocess
import tempfile
import threading

from posixlib import (KiB, MiB, FsTestCase, pattern, pread_exact, read_file, write_all,
                      write_file)

# Trees to copy into the tarball, in order, until the budget below is used up.
TAR_SOURCES = ('/usr/share/doc', '/usr/include')
TAR_MAX_FILES = 3000
TAR_MAX_BYTES = 40 * MiB
TAR_MAX_FILE = 4 * MiB


def collect_tar_entries(base, sources):
    """Paths (relative to base) of dirs, files and symlinks under sources, parents first.

    Files with several hard links are left out: tar would store them as hard links, which
    tierfs refuses by design, and the point here is data, modes and symlinks.
    """
    entries, files, total = [], 0, 0
    for source in sources:
        if not os.path.isdir(source) or files >= TAR_MAX_FILES or total >= TAR_MAX_BYTES:
            continue
        parent = os.path.relpath(os.path.dirname(source), base)
        if parent != '.' and parent not in entries:
            entries.append(parent)
        for dirpath, dirnames, filenames in os.walk(source):
            dirnames.sort()
            entries.append(os.path.relpath(dirpath, base))
            for name in sorted(dirnames + filenames):
                full = os.path.join(dirpath, name)
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    entries.append(os.path.relpath(full, base))
                elif (stat.S_ISREG(st.st_mode) and st.st_nlink == 1
                      and st.st_size <= TAR_MAX_FILE):
                    entries.append(os.path.relpath(full, base))
                    files += 1
                    total += st.st_size
            if files >= TAR_MAX_FILES or total >= TAR_MAX_BYTES:
                break
    return entries, files, total


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        while block := f.read(MiB):
            digest.update(block)
    return digest.hexdigest()


def run(args, cwd=None, env=None):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          errors='replace')


class TarTests(FsTestCase):

    def setUp(self):
        super().setUp()
        if not shutil.which('tar'):
            self.skipTest('no tar command')
        # The tarball is built outside the mount, from the real source tree.
        self.outside = tempfile.mkdtemp(prefix='posix-suite-tar.')
        self.addCleanup(shutil.rmtree, self.outside)

    def test_extract_real_tarball(self):
        base = '/usr'
        entries, files, total = collect_tar_entries(base, TAR_SOURCES)
        if files < 100:
            self.skipTest(f'too little to archive under {TAR_SOURCES} ({files} files)')
        tarball = self.make_tarball(base, entries)
        dest = self.path('extract')
        os.mkdir(dest)
        result = run(['tar', '-xpf', tarball, '-C', dest])
        self.assertTrue(result.returncode == 0 and not result.stderr,
                        f'tar -x into {dest} failed (exit {result.returncode}):\n'
                        f'{result.stderr[-2000:]}')
        result = run(['tar', '-df', tarball, '-C', dest])
        self.assertEqual(result.returncode, 0,
                         f'tar --compare in {dest} found differences:\n{result.stdout[-3000:]}'
                         f'{result.stderr[-2000:]}')
        self.compare_trees(base, dest, entries)

    def make_tarball(self, base, entries):
        listing = os.path.join(self.outside, 'files')
        with open(listing, 'wb') as f:
            f.write(b'\0'.join(os.fsencode(e) for e in entries) + b'\0')
        tarball = os.path.join(self.outside, 'tree.tar')
        result = run(['tar', '-cf', tarball, '-C', base, '--no-recursion', '--null', '-T',
                      listing])
        self.assertEqual(result.returncode, 0, f'building {tarball}: {result.stderr[-2000:]}')
        return tarball

    def compare_trees(self, base, dest, entries):
        """Every entry: same type, mode, owner; files same bytes and mtime; links same target."""
        for rel in entries:
            src, dst = os.path.join(base, rel), os.path.join(dest, rel)
            s, d = os.lstat(src), os.lstat(dst)
            self.assertEqual(stat.S_IFMT(d.st_mode), stat.S_IFMT(s.st_mode), f'type of {dst}')
            self.assertEqual((d.st_uid, d.st_gid), (s.st_uid, s.st_gid), f'owner of {dst}')
            if stat.S_ISLNK(s.st_mode):
                self.assertEqual(os.readlink(dst), os.readlink(src), f'symlink target {dst}')
                continue
            self.assertEqual(stat.S_IMODE(d.st_mode), stat.S_IMODE(s.st_mode), f'mode of {dst}')
            if stat.S_ISREG(s.st_mode):
                self.assertEqual(d.st_size, s.st_size, f'size of {dst}')
                self.assertEqual(int(d.st_mtime), int(s.st_mtime), f'mtime of {dst}')
                self.assertEqual(sha256_of(dst), sha256_of(src), f'content of {dst}')
        extracted = set()
        for dirpath, dirnames, filenames in os.walk(dest):
            for name in dirnames + filenames:
                extracted.add(os.path.relpath(os.path.join(dirpath, name), dest))
        extra = extracted - set(entries)
        missing = set(entries) - extracted
        self.assertFalse(extra or missing, f'{dest}: extra {sorted(extra)[:5]}, '
                                           f'missing {sorted(missing)[:5]}')


class GitTests(FsTestCase):

    def setUp(self):
        super().setUp()
        if not shutil.which('git'):
            self.skipTest('no git command')
        self.repo = self.path('repo')
        os.mkdir(self.repo)
        # No user or system config may change the outcome.
        self.env = dict(os.environ, GIT_CONFIG_NOSYSTEM='1', GIT_CONFIG_GLOBAL=os.devnull,
                        HOME=self.dir, LC_ALL='C')

    def git(self, *args):
        result = run(['git', '-c', 'user.name=POSIX Suite', '-c', 'user.email=suite@example.com',
                      *args], cwd=self.repo, env=self.env)
        self.assertEqual(result.returncode, 0, f'git {" ".join(args)} in {self.repo} failed:\n'
                                               f'{result.stdout[-2000:]}{result.stderr[-2000:]}')
        return result.stdout

    def populate(self, count):
        rng = random.Random(30)
        paths = []
        for i in range(count):
            rel = os.path.join(f'pkg{i % 5}', f'mod{i % 7}', f'part{i % 3}', f'file{i}.txt')
            os.makedirs(os.path.join(self.repo, os.path.dirname(rel)), exist_ok=True)
            lines = ''.join(f'line {n} of {rel}: {rng.random()}\n'
                            for n in range(rng.randrange(50)))
            write_file(os.path.join(self.repo, rel), lines.encode())
            paths.append(rel)
        write_file(os.path.join(self.repo, 'run.sh'), b'#!/bin/sh\necho hi\n', mode=0o755)
        os.chmod(os.path.join(self.repo, 'run.sh'), 0o755)
        write_file(os.path.join(self.repo, 'blob.bin'), pattern(300 * KiB, 31))
        os.symlink('pkg0/mod0/part0/file0.txt', os.path.join(self.repo, 'link'))
        return paths

    def test_git_workflow(self):
        self.git('init', '-q', '-b', 'main')
        paths = self.populate(300)
        self.git('add', '-A')
        self.git('commit', '-q', '-m', 'first')
        staged = self.git('ls-files', '-s', 'run.sh', 'link')
        self.assertIn('100755', staged, 'git did not see the executable bit of run.sh')
        self.assertIn('120000', staged, 'git did not see link as a symlink')

        for rel in paths[:40]:
            with open(os.path.join(self.repo, rel), 'a') as f:
                f.write('edited\n')
        for rel in paths[40:50]:
            os.unlink(os.path.join(self.repo, rel))
        os.rename(os.path.join(self.repo, 'pkg4'), os.path.join(self.repo, 'pkg4-renamed'))
        write_file(os.path.join(self.repo, 'pkg0', 'new.txt'), b'new file\n')
        self.assertNotEqual(self.git('status', '--porcelain'), '', 'git saw no changes')
        self.git('add', '-A')
        self.git('commit', '-q', '-m', 'second')

        self.assertClean()
        self.assertEqual(len(self.git('log', '--oneline').splitlines()), 2, 'git log: 2 commits')
        self.git('gc', '-q')  # packs objects: big sequential writes, renames, mmap reads
        self.assertClean()
        self.git('checkout', '-q', 'HEAD~1')  # rewrites the working tree back
        self.assertEqual(self.git('show', 'HEAD:' + paths[0]),
                         read_file(os.path.join(self.repo, paths[0])).decode(),
                         'checkout content')
        self.assertTrue(os.path.exists(os.path.join(self.repo, 'pkg4')), 'checkout of pkg4')
        self.assertClean()

    def assertClean(self):
        fsck = run(['git', 'fsck', '--full', '--strict'], cwd=self.repo, env=self.env)
        self.assertEqual(fsck.returncode, 0, f'git fsck in {self.repo}: {fsck.stderr[-2000:]}')
        problems = [line for line in (fsck.stdout + fsck.stderr).splitlines()
                    if line.split(' ')[0] in ('error:', 'missing', 'dangling', 'broken', 'bad')]
        self.assertEqual(problems, [], f'git fsck in {self.repo} reported problems')
        self.assertEqual(self.git('status', '--porcelain'), '', f'git status in {self.repo}')


class ConcurrentReadTests(FsTestCase):
    """16 readers of one file at once, with different read sizes and orders; every byte checked."""

    SIZE = 64 * MiB
    READERS = 16

    def test_sixteen_concurrent_readers(self):
        path = self.path('shared')
        expected = pattern(self.SIZE, 40)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            write_all(fd, expected)
        finally:
            os.close(fd)

        shared_fd = os.open(path, os.O_RDONLY)  # half the readers share one fd (pread is safe)
        self.addCleanup(os.close, shared_fd)
        errors = []
        start = threading.Barrier(self.READERS)
        plans = ['seq-4K', 'seq-128K', 'seq-1M', 'random-unaligned']

        def reader(index):
            plan = plans[index % len(plans)]
            own_fd = os.open(path, os.O_RDONLY) if index % 2 else None
            try:
                start.wait()
                fd = shared_fd if own_fd is None else own_fd
                self.read_with_plan(fd, plan, index, expected, errors)
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(f'reader {index} ({plan}): {e!r}')
            finally:
                if own_fd is not None:
                    os.close(own_fd)

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(self.READERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [], f'concurrent readers of {path}')

    def read_with_plan(self, fd, plan, index, expected, errors):
        covered = 0
        for offset, length in self.ranges(plan, index):
            data = pread_exact(fd, length, offset)
            want = expected[offset:offset + length]
            if data != want:
                errors.append(f'reader {index} ({plan}): wrong bytes in [{offset}, '
                              f'{offset + length}) (got {len(data)} bytes)')
                return
            covered += len(data)
        if covered != self.SIZE:
            errors.append(f'reader {index} ({plan}): read {covered} bytes, not {self.SIZE}')

    def ranges(self, plan, index):
        """(offset, length) pairs that cover the whole file exactly once."""
        if plan.startswith('seq-'):
            step = {'seq-4K': 4 * KiB, 'seq-128K': 128 * KiB, 'seq-1M': MiB}[plan]
            return [(off, min(step, self.SIZE - off)) for off in range(0, self.SIZE, step)]
        step = 77777  # odd size: reads straddle pages and chunk boundaries
        ranges = [(off, min(step, self.SIZE - off)) for off in range(0, self.SIZE, step)]
        random.Random(index).shuffle(ranges)
        return ranges
