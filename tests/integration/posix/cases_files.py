"""File data: open/read/write/close, O_EXCL/O_APPEND/O_TRUNC, truncate, holes, fsync, mmap,
data visible before close, and one big file checked end to end by SHA-256."""

import errno
import hashlib
import mmap
import os
import threading
import time

from posixlib import (CONFIG, GiB, KiB, MiB, NOTES, BlockStream, FsTestCase, pattern,
                      pread_exact, read_file, run_in_child, write_all, write_file)


class OpenReadWriteTests(FsTestCase):

    def test_create_write_read_close(self):
        path = self.path('file')
        chunks = [pattern(1000, 1), pattern(70 * KiB, 2), b'tail']
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        for chunk in chunks:
            self.assertEqual(os.write(fd, chunk), len(chunk), f'write to {path}: short write')
        os.close(fd)
        expected = b''.join(chunks)
        self.assertFileContent(path, expected)

        fd = os.open(path, os.O_RDONLY)
        try:
            self.assertEqual(os.lseek(fd, 0, os.SEEK_END), len(expected), 'lseek SEEK_END')
            self.assertEqual(os.read(fd, 100), b'', f'read at EOF of {path} must return nothing')
            self.assertEqual(pread_exact(fd, 10, 995), expected[995:1005], 'pread across writes')
        finally:
            os.close(fd)

    def test_overwrite_middle_keeps_rest(self):
        path = self.path('file')
        original = pattern(200 * KiB, 3)
        write_file(path, original)
        fd = os.open(path, os.O_RDWR)
        try:
            os.lseek(fd, 100 * KiB - 7, os.SEEK_SET)
            write_all(fd, b'X' * 20)
        finally:
            os.close(fd)
        expected = bytearray(original)
        expected[100 * KiB - 7:100 * KiB + 13] = b'X' * 20
        self.assertFileContent(path, bytes(expected))

    def test_open_missing_file(self):
        self.assertErrno(errno.ENOENT, 'open O_RDONLY of missing file',
                         os.open, self.path('missing'), os.O_RDONLY)
        self.assertErrno(errno.ENOENT, 'open O_WRONLY (no O_CREAT) of missing file',
                         os.open, self.path('missing'), os.O_WRONLY)
        self.assertErrno(errno.ENOENT, 'open O_CREAT in a missing directory',
                         os.open, self.path('nodir', 'file'), os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertMissing(self.path('missing'), 'open without O_CREAT must not create')

    def test_o_excl(self):
        path = self.path('file')
        write_file(path, b'original')
        self.assertErrno(errno.EEXIST, f'open O_CREAT|O_EXCL of existing file {path}',
                         os.open, path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.assertFileContent(path, b'original')
        os.mkdir(self.path('dir'))
        self.assertErrno(errno.EEXIST, 'open O_CREAT|O_EXCL of existing directory',
                         os.open, self.path('dir'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        # O_EXCL must not follow a symlink: the dangling link's target is not created.
        os.symlink('target', self.path('link'))
        self.assertErrno(errno.EEXIST, 'open O_CREAT|O_EXCL of a dangling symlink',
                         os.open, self.path('link'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.assertMissing(self.path('target'), 'O_EXCL followed the symlink')

    def test_o_trunc(self):
        path = self.path('file')
        write_file(path, pattern(300 * KiB, 4))
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            self.assertEqual(os.fstat(fd).st_size, 0, f'fstat right after O_TRUNC of {path}')
            write_all(fd, b'short')
        finally:
            os.close(fd)
        self.assertFileContent(path, b'short')


class AppendTests(FsTestCase):

    def test_two_fds_append_at_end(self):
        path = self.path('log')
        write_file(path, b'head|')
        fd1 = os.open(path, os.O_WRONLY | os.O_APPEND)
        fd2 = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd1, b'A1|')
            os.write(fd2, b'B1|')
            os.lseek(fd1, 0, os.SEEK_SET)  # O_APPEND ignores the file offset
            os.write(fd1, b'A2|')
            os.write(fd2, b'B2|')
        finally:
            os.close(fd1)
            os.close(fd2)
        self.assertFileContent(path, b'head|A1|B1|A2|B2|')

    def test_concurrent_appends_from_two_threads(self):
        """Two fds appending at once: every record lands whole at the end, none overwritten."""
        path = self.path('log')
        write_file(path, b'')
        records_per_writer, record_size = 500, 100

        def record(tag, seq):
            return (f'{tag}{seq:06d}'.ljust(record_size - 1, tag) + '\n').encode()

        def writer(tag):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                for seq in range(records_per_writer):
                    os.write(fd, record(tag, seq))
            finally:
                os.close(fd)

        threads = [threading.Thread(target=writer, args=(tag,)) for tag in 'AB']
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        data = read_file(path)
        self.assertEqual(len(data), 2 * records_per_writer * record_size,
                         f'{path}: appended records were lost or overwritten')
        seen = {'A': [], 'B': []}
        for offset in range(0, len(data), record_size):
            rec = data[offset:offset + record_size]
            tag = chr(rec[0])
            self.assertIn(tag, seen, f'{path}: garbage record at offset {offset}: {rec[:20]!r}')
            seq = int(rec[1:7])
            self.assertEqual(rec, record(tag, seq), f'{path}: torn record at offset {offset}')
            seen[tag].append(seq)
        for tag, seqs in seen.items():
            self.assertEqual(seqs, list(range(records_per_writer)),
                             f'{path}: writer {tag} records missing or out of order')


class TruncateAndHoleTests(FsTestCase):

    def test_ftruncate_up_and_down(self):
        path = self.path('file')
        data = pattern(10000, 5)
        write_file(path, data)
        fd = os.open(path, os.O_RDWR)
        try:
            os.ftruncate(fd, 50000)
            self.assertEqual(os.fstat(fd).st_size, 50000, 'fstat after ftruncate up')
            self.assertEqual(pread_exact(fd, 50000, 0), data + bytes(40000),
                             'ftruncate up: old data kept, the extension reads as zeros')
            os.ftruncate(fd, 3000)
            self.assertEqual(os.fstat(fd).st_size, 3000, 'fstat after ftruncate down')
            self.assertEqual(pread_exact(fd, 10000, 0), data[:3000], 'ftruncate down')
            # Growing again must not resurrect the bytes that were cut off.
            os.ftruncate(fd, 8000)
            self.assertEqual(pread_exact(fd, 10000, 0), data[:3000] + bytes(5000),
                             'truncate down then up: cut-off data came back')
        finally:
            os.close(fd)
        self.assertEqual(os.stat(path).st_size, 8000, f'stat {path} after close')

    def test_truncate_by_path(self):
        path = self.path('file')
        data = pattern(3 * MiB + 17, 6)  # several pages and (probably) several chunks
        write_file(path, data)
        os.truncate(path, MiB + 5)
        self.assertFileContent(path, data[:MiB + 5])
        os.truncate(path, 2 * MiB)
        self.assertFileContent(path, data[:MiB + 5] + bytes(MiB - 5))
        os.truncate(path, 0)
        self.assertFileContent(path, b'')
        self.assertErrno(errno.ENOENT, 'truncate of missing file', os.truncate,
                         self.path('missing'), 10)
        os.mkdir(self.path('dir'))
        self.assertErrno(errno.EISDIR, 'truncate of a directory', os.truncate,
                         self.path('dir'), 10)

    def test_pwrite_beyond_eof_makes_hole(self):
        path = self.path('file')
        head = pattern(100, 7)
        write_file(path, head)
        fd = os.open(path, os.O_WRONLY)
        try:
            self.assertEqual(os.pwrite(fd, b'0123456789', 100000), 10, 'pwrite beyond EOF')
        finally:
            os.close(fd)
        self.assertFileContent(path, head + bytes(100000 - 100) + b'0123456789')

    def test_sparse_file_far_out(self):
        """One byte at 5 GiB and one at 4 GiB: offsets past 32 bits survive, holes read zero."""
        path = self.path('sparse')
        far, at_4g = 5 * GiB, 4 * GiB
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            self.assertEqual(os.pwrite(fd, b'X', far), 1, f'pwrite at 5 GiB in {path}')
            self.assertEqual(os.pwrite(fd, b'Y', at_4g), 1, f'pwrite at 4 GiB in {path}')
        finally:
            os.close(fd)
        self.assertEqual(os.stat(path).st_size, far + 1, f'stat {path}: st_size')
        fd = os.open(path, os.O_RDONLY)
        try:
            # A 32-bit offset bug would put 'Y' at 0 and 'X' at 1 GiB.
            for offset in (0, GiB - 2048, 2 * GiB - 2048, 3 * GiB):
                self.assertEqual(pread_exact(fd, 4096, offset), bytes(4096),
                                 f'{path}: hole at offset {offset} must read as zeros')
            self.assertEqual(pread_exact(fd, 8192, at_4g - 4096),
                             bytes(4096) + b'Y' + bytes(4095), f'{path}: around 4 GiB')
            self.assertEqual(pread_exact(fd, 8192, far - 4096), bytes(4096) + b'X',
                             f'{path}: last 4 KiB of hole plus the byte at 5 GiB')
            self.assertEqual(os.pread(fd, 10, far + 1), b'', f'{path}: read at EOF')
        finally:
            os.close(fd)


class SyncTests(FsTestCase):

    def test_fsync_file_and_directory(self):
        path = self.path('file')
        data = pattern(1 * MiB, 8)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            write_all(fd, data)
            os.fsync(fd)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # fsync through a read-only fd is valid too
        finally:
            os.close(fd)
        dfd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self.assertFileContent(path, data)


class VisibilityTests(FsTestCase):
    """Data written but not yet closed or fsynced is what every reader sees."""

    def test_read_through_second_fd_sees_unflushed_write(self):
        path = self.path('file')
        first, second = pattern(300 * KiB, 9), pattern(5000, 10)
        fd1 = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        fd2 = None
        try:
            write_all(fd1, first)
            fd2 = os.open(path, os.O_RDONLY)
            self.assertEqual(os.fstat(fd2).st_size, len(first), 'fstat via second fd')
            self.assertEqual(os.stat(path).st_size, len(first), f'stat {path} while open')
            self.assertBytes(pread_exact(fd2, len(first) + 10, 0), first,
                             'second fd reading data written through the first, not closed')
            # More data, and an overwrite, while both stay open.
            write_all(fd1, second)
            os.pwrite(fd1, b'ZZZZ', 10)
            expected = first[:10] + b'ZZZZ' + first[14:] + second
            self.assertBytes(pread_exact(fd2, len(expected) + 10, 0), expected,
                             'second fd after more writes through the first')
            # Another process sees it too (it cannot share this process's buffers).
            kind, value = run_in_child(lambda: read_file(path))
            self.assertEqual(kind, 'ok', f'child read of {path} failed: {value}')
            self.assertBytes(value, expected, 'another process reading the open file')
        finally:
            os.close(fd1)
            if fd2 is not None:
                os.close(fd2)

    def test_unlinked_open_file_stays_readable(self):
        path = self.path('file')
        data = pattern(200 * KiB, 11)
        write_file(path, data)
        fd = os.open(path, os.O_RDWR)
        try:
            os.unlink(path)
            self.assertMissing(path, 'unlinked')
            self.assertBytes(pread_exact(fd, len(data), 0), data, 'read of unlinked open file')
            os.pwrite(fd, b'more', len(data))
            self.assertBytes(pread_exact(fd, 10, len(data)), b'more',
                             'write then read of unlinked open file')
        finally:
            os.close(fd)
        self.assertEqual(os.listdir(self.dir), [], 'unlinked file reappeared after close')


class MmapTests(FsTestCase):
    """DataLoaders (numpy.memmap, safetensors) read through mmap."""

    def test_mmap_read(self):
        path = self.path('file')
        data = pattern(3 * MiB + 123, 12)
        write_file(path, data)
        with open(path, 'rb') as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            self.assertEqual(len(m), len(data), f'mmap of {path}: length')
            self.assertBytes(m[:], data, f'mmap read of {path}')

    def test_mmap_shared_write(self):
        path = self.path('file')
        data = pattern(256 * KiB, 13)
        write_file(path, data)
        with open(path, 'r+b') as f, mmap.mmap(f.fileno(), 0) as m:
            m[100:105] = b'hello'
            m[200 * KiB:200 * KiB + 3] = b'xyz'
            m.flush()
        expected = bytearray(data)
        expected[100:105] = b'hello'
        expected[200 * KiB:200 * KiB + 3] = b'xyz'
        self.assertFileContent(path, bytes(expected))


class BigFileTests(FsTestCase):

    def test_big_file_sha256(self):
        size = CONFIG['big_size']
        path = self.path('big')
        stream = BlockStream()
        written = hashlib.sha256()
        start = time.monotonic()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for index, offset in enumerate(range(0, size, MiB)):
                block = stream.block(index)[:size - offset]
                written.update(block)
                write_all(fd, block)
        finally:
            os.close(fd)
        write_seconds = time.monotonic() - start
        self.assertEqual(os.stat(path).st_size, size, f'stat {path}: st_size')

        start = time.monotonic()
        read_back = hashlib.sha256()
        buffer = bytearray(MiB)
        total = 0
        with open(path, 'rb', buffering=0) as f:
            while n := f.readinto(buffer):
                read_back.update(memoryview(buffer)[:n])
                total += n
        read_seconds = time.monotonic() - start
        self.assertEqual(total, size, f'read of {path}: byte count')
        self.assertEqual(read_back.hexdigest(), written.hexdigest(), f'sha256 of {path}')
        NOTES.append(f'big file {size / MiB:.0f} MiB: write {size / MiB / write_seconds:.0f} '
                     f'MiB/s, read {size / MiB / read_seconds:.0f} MiB/s (incl. sha256)')
