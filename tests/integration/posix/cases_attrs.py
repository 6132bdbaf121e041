"""Attributes: stat, chmod/chown, timestamps, user.* xattrs, statfs, permission checks."""

import errno
import os
import stat
import time

from posixlib import (CONFIG, MiB, NOBODY, FsTestCase, mode_of, pattern, read_file,
                      run_in_child, write_file)


class StatTests(FsTestCase):

    def test_types_and_sizes(self):
        data = pattern(MiB + 3, 20)
        write_file(self.path('file'), data)
        write_file(self.path('empty'), b'')
        os.mkdir(self.path('dir'))
        os.symlink('file', self.path('link'))

        st = os.stat(self.path('file'))
        self.assertTrue(stat.S_ISREG(st.st_mode), f'file mode {st.st_mode:o}')
        self.assertEqual(st.st_size, len(data), 'st_size of file')
        self.assertEqual(st.st_nlink, 1, 'st_nlink of file')
        self.assertGreater(st.st_blocks, 0, 'st_blocks of a 1 MiB file (du would show 0)')
        self.assertEqual(os.stat(self.path('empty')).st_size, 0, 'st_size of empty file')
        self.assertNotEqual(st.st_ino, os.stat(self.path('empty')).st_ino,
                            'two files share an inode number')
        self.assertTrue(stat.S_ISDIR(os.stat(self.path('dir')).st_mode), 'dir mode')
        self.assertTrue(stat.S_ISLNK(os.lstat(self.path('link')).st_mode), 'lstat of link')
        self.assertEqual(os.stat(self.path('link')).st_ino, st.st_ino, 'stat follows link')

        fd = os.open(self.path('file'), os.O_RDONLY)
        try:
            fst = os.fstat(fd)
        finally:
            os.close(fd)
        self.assertEqual((fst.st_ino, fst.st_size, fst.st_mode),
                         (st.st_ino, st.st_size, st.st_mode), 'fstat and stat disagree')

    def test_chmod(self):
        path = self.path('file')
        write_file(path, b'x')
        for mode in (0o600, 0o644, 0o755, 0o640, 0o000, 0o777, 0o4755, 0o2755):
            os.chmod(path, mode)
            st = os.stat(path)
            self.assertEqual(stat.S_IMODE(st.st_mode), mode, f'mode after chmod {mode:o} {path}')
            self.assertTrue(stat.S_ISREG(st.st_mode), f'chmod changed the file type of {path}')
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fchmod(fd, 0o604)
        finally:
            os.close(fd)
        self.assertEqual(mode_of(path), 0o604, 'mode after fchmod')
        os.mkdir(self.path('dir'))
        for mode in (0o700, 0o1777, 0o755):
            os.chmod(self.path('dir'), mode)
            self.assertEqual(mode_of(self.path('dir')), mode, f'dir mode after chmod {mode:o}')
        self.assertErrno(errno.ENOENT, 'chmod of a missing file', os.chmod, self.path('no'), 0o644)

    def test_chown(self):
        if os.geteuid() != 0:
            self.skipTest('chown to another user needs root')
        path = self.path('file')
        write_file(path, b'x')
        os.chown(path, 1234, 1234)
        self.assertOwner(path, 1234, 1234)
        os.chown(path, -1, 4321)  # -1 keeps the uid
        self.assertOwner(path, 1234, 4321)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fchown(fd, 0, 0)
        finally:
            os.close(fd)
        self.assertOwner(path, 0, 0)
        os.mkdir(self.path('dir'))
        os.chown(self.path('dir'), 1234, 1234)
        self.assertOwner(self.path('dir'), 1234, 1234)
        os.symlink('file', self.path('link'))
        os.lchown(self.path('link'), 1234, 1234)
        self.assertOwner(self.path('link'), 1234, 1234, follow=False)
        self.assertOwner(path, 0, 0)  # lchown must not touch the target

    def assertOwner(self, path, uid, gid, follow=True):
        st = os.stat(path) if follow else os.lstat(path)
        self.assertEqual((st.st_uid, st.st_gid), (uid, gid), f'owner of {path}')


class TimestampTests(FsTestCase):

    def test_utime_nanoseconds(self):
        path = self.path('file')
        write_file(path, b'x')
        os.mkdir(self.path('dir'))
        cases = [(1_500_000_000_123_456_789, 1_600_000_000_987_654_321),
                 (4_102_444_800_000_000_001, 4_102_444_800_999_999_999),  # 2100: past 2038
                 (1, 999_999_999)]                                        # 1970
        for target in (path, self.path('dir')):
            for atime, mtime in cases:
                os.utime(target, ns=(atime, mtime))
                st = os.stat(target)
                self.assertEqual((st.st_atime_ns, st.st_mtime_ns), (atime, mtime),
                                 f'utime ns=({atime}, {mtime}) on {target} read back')
        fd = os.open(path, os.O_RDONLY)
        try:
            os.utime(fd, ns=(2_000_000_000_000_000_007, 2_000_000_000_000_000_009))
        finally:
            os.close(fd)
        self.assertEqual(os.stat(path).st_mtime_ns, 2_000_000_000_000_000_009, 'futimens')

    def test_utime_now(self):
        path = self.path('file')
        write_file(path, b'x')
        os.utime(path, ns=(10**18, 10**18))
        os.utime(path)  # NULL times: set both to now
        self.assertRecent(os.stat(path).st_mtime, f'mtime of {path} after utime(now)')
        self.assertRecent(os.stat(path).st_atime, f'atime of {path} after utime(now)')

    def test_ctime_changes_on_chmod(self):
        path = self.path('file')
        write_file(path, b'x')
        before = os.stat(path)
        self.wait_for_clock_tick()
        os.chmod(path, 0o600)
        after = os.stat(path)
        self.assertGreater(after.st_ctime_ns, before.st_ctime_ns, f'ctime after chmod {path}')
        self.assertEqual(after.st_mtime_ns, before.st_mtime_ns, f'chmod changed mtime of {path}')

    def test_write_and_truncate_update_mtime(self):
        path = self.path('file')
        write_file(path, b'x')
        old = 1_000_000_000_000_000_000  # 2001
        os.utime(path, ns=(old, old))
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b'new data')
        finally:
            os.close(fd)
        self.assertRecent(os.stat(path).st_mtime, f'mtime of {path} after write')
        self.assertRecent(os.stat(path).st_ctime, f'ctime of {path} after write')
        os.utime(path, ns=(old, old))
        os.truncate(path, 2)
        self.assertRecent(os.stat(path).st_mtime, f'mtime of {path} after truncate')

    def test_directory_mtime_follows_entries(self):
        """make, rsync and backup tools rely on a directory's mtime changing with its entries."""
        old = 1_000_000_000_000_000_000
        directory = self.path('dir')
        os.mkdir(directory)
        steps = [('create', lambda: write_file(os.path.join(directory, 'f'), b'x')),
                 ('rename', lambda: os.rename(os.path.join(directory, 'f'),
                                              os.path.join(directory, 'g'))),
                 ('unlink', lambda: os.unlink(os.path.join(directory, 'g'))),
                 ('mkdir', lambda: os.mkdir(os.path.join(directory, 'sub')))]
        for what, step in steps:
            os.utime(directory, ns=(old, old))
            step()
            self.assertRecent(os.stat(directory).st_mtime, f'mtime of {directory} after {what}')

    def assertRecent(self, seconds, what):
        self.assertLess(abs(seconds - time.time()), 60, f'{what}: {time.ctime(seconds)} is not now')


class XattrTests(FsTestCase):

    def user_names(self, path):
        return sorted(n for n in os.listxattr(path) if n.startswith('user.'))

    def test_set_get_list_remove(self):
        path = self.path('file')
        write_file(path, b'x')
        values = {'user.small': b'1', 'user.empty': b'', 'user.binary': bytes(range(256))}
        for name, value in values.items():
            os.setxattr(path, name, value)
        for name, value in values.items():
            self.assertEqual(os.getxattr(path, name), value, f'getxattr {name} on {path}')
        self.assertEqual(self.user_names(path), sorted(values), f'listxattr {path}')
        os.removexattr(path, 'user.small')
        self.assertErrno(errno.ENODATA, 'getxattr of a removed attribute', os.getxattr, path,
                         'user.small')
        self.assertErrno(errno.ENODATA, 'removexattr of a missing attribute', os.removexattr,
                         path, 'user.small')
        self.assertEqual(self.user_names(path), sorted(set(values) - {'user.small'}),
                         f'listxattr {path} after removexattr')
        self.assertFileContent(path, b'x')  # xattrs must not touch the data

    def test_4000_byte_value(self):
        # On its own file: ext4 keeps all of a file's xattrs in one 4 KiB block.
        path = self.path('file')
        write_file(path, b'x')
        value = pattern(4000, 21)
        os.setxattr(path, 'user.big', value)
        self.assertEqual(os.getxattr(path, 'user.big'), value, f'getxattr user.big on {path}')
        self.assertEqual(self.user_names(path), ['user.big'], f'listxattr {path}')

    def test_flags(self):
        path = self.path('file')
        write_file(path, b'x')
        os.setxattr(path, 'user.a', b'first', os.XATTR_CREATE)
        self.assertErrno(errno.EEXIST, 'setxattr XATTR_CREATE of an existing attribute',
                         os.setxattr, path, 'user.a', b'second', os.XATTR_CREATE)
        self.assertEqual(os.getxattr(path, 'user.a'), b'first', 'value after failed CREATE')
        self.assertErrno(errno.ENODATA, 'setxattr XATTR_REPLACE of a missing attribute',
                         os.setxattr, path, 'user.b', b'x', os.XATTR_REPLACE)
        self.assertErrno(errno.ENODATA, 'getxattr after failed REPLACE', os.getxattr, path,
                         'user.b')
        os.setxattr(path, 'user.a', b'replaced', os.XATTR_REPLACE)
        self.assertEqual(os.getxattr(path, 'user.a'), b'replaced', 'value after REPLACE')
        self.assertErrno(errno.ENODATA, 'getxattr of a never-set attribute', os.getxattr, path,
                         'user.never')

    def test_directory_rename_and_missing_path(self):
        os.mkdir(self.path('dir'))
        os.setxattr(self.path('dir'), 'user.tag', b'dir value')
        self.assertEqual(os.getxattr(self.path('dir'), 'user.tag'), b'dir value', 'dir xattr')
        write_file(self.path('f'), b'x')
        os.setxattr(self.path('f'), 'user.tag', b'file value')
        os.rename(self.path('f'), self.path('dir', 'g'))
        self.assertEqual(os.getxattr(self.path('dir', 'g'), 'user.tag'), b'file value',
                         'xattr must follow the file through rename')
        self.assertErrno(errno.ENOENT, 'getxattr on a missing path', os.getxattr,
                         self.path('missing'), 'user.tag')


class StatfsTests(FsTestCase):

    def test_statvfs_is_sane(self):
        st = os.statvfs(self.dir)
        self.assertGreater(st.f_bsize, 0, 'f_bsize')
        self.assertGreater(st.f_frsize, 0, 'f_frsize')
        self.assertGreater(st.f_blocks, 0, 'f_blocks')
        self.assertGreaterEqual(st.f_blocks, st.f_bfree, 'f_blocks >= f_bfree')
        self.assertGreaterEqual(st.f_bfree, st.f_bavail, 'f_bfree >= f_bavail')
        self.assertGreaterEqual(st.f_namemax, 255, 'f_namemax (255-byte names must work)')
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.assertEqual(os.fstatvfs(fd).f_bsize, st.f_bsize, 'fstatvfs and statvfs differ')
        finally:
            os.close(fd)


class PermissionTests(FsTestCase):
    """A second user (uid/gid 65534) against root's files: the kernel's POSIX checks apply."""

    def setUp(self):
        if not CONFIG['other_users']:
            self.skipTest('needs --other-users (forks children as uid/gid 65534)')
        if os.geteuid() != 0:
            self.skipTest('switching to uid 65534 needs root')
        super().setUp()
        os.chmod(self.dir, 0o755)  # mkdtemp made it 0700
        kind, value = self.as_nobody(lambda: os.stat(self.dir))
        if kind != 'ok':
            self.fail(f'uid {NOBODY} cannot even stat {self.dir} ({os.strerror(value)}): make '
                      f'the mount point searchable by others and mount with -o allow_other')

    def as_nobody(self, action):
        return run_in_child(action, uid=NOBODY, gid=NOBODY)

    def assertChildErrno(self, expected, what, action):
        kind, value = self.as_nobody(action)
        self.assertEqual((kind, value), ('err', expected),
                         f'{what} as uid {NOBODY}: expected {errno.errorcode[expected]}, got '
                         f'{"success" if kind == "ok" else errno.errorcode.get(value, value)}')

    def test_read_private_file_denied(self):
        path = self.path('secret')
        write_file(path, b'secret', mode=0o600)
        os.chmod(path, 0o600)
        self.assertChildErrno(errno.EACCES, f'read of 0600 root file {path}',
                              lambda: read_file(path))
        self.assertChildErrno(errno.EACCES, f'write to 0600 root file {path}',
                              lambda: write_file(path, b'overwritten'))
        self.assertFileContent(path, b'secret')

    def test_read_public_file_allowed(self):
        path = self.path('public')
        write_file(path, b'public data')
        os.chmod(path, 0o644)
        kind, value = self.as_nobody(lambda: read_file(path))
        self.assertEqual((kind, value), ('ok', b'public data'), f'read of 0644 file {path}')
        self.assertChildErrno(errno.EACCES, f'write to 0644 root file {path}',
                              lambda: os.open(path, os.O_WRONLY))

    def test_create_in_root_directory_denied(self):
        directory = self.path('closed')
        os.mkdir(directory)
        os.chmod(directory, 0o755)
        path = os.path.join(directory, 'new')
        self.assertChildErrno(errno.EACCES, f'create in 0755 root directory {directory}',
                              lambda: write_file(path, b'x'))
        self.assertChildErrno(errno.EACCES, f'mkdir in 0755 root directory {directory}',
                              lambda: os.mkdir(os.path.join(directory, 'sub')))
        self.assertNames(directory, [])

    def test_create_in_open_directory_allowed(self):
        directory = self.path('open')
        os.mkdir(directory)
        os.chmod(directory, 0o777)
        path = os.path.join(directory, 'new')
        kind, value = self.as_nobody(lambda: write_file(path, b'by nobody'))
        self.assertEqual(kind, 'ok', f'create in 0777 directory {directory} failed: '
                                     f'{errno.errorcode.get(value, value)}')
        st = os.stat(path)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY), f'owner of {path}')
        self.assertFileContent(path, b'by nobody')

    def test_chmod_and_chown_by_non_owner_denied(self):
        path = self.path('file')
        write_file(path, b'x')
        os.chmod(path, 0o644)
        self.assertChildErrno(errno.EPERM, f'chmod of root file {path}',
                              lambda: os.chmod(path, 0o777))
        self.assertChildErrno(errno.EPERM, f'chown of root file {path}',
                              lambda: os.chown(path, NOBODY, NOBODY))
        self.assertEqual(mode_of(path), 0o644, f'mode of {path} after denied chmod')

    def test_traverse_denied(self):
        directory = self.path('locked')
        os.mkdir(directory)
        write_file(os.path.join(directory, 'f'), b'x')
        os.chmod(directory, 0o700)
        self.assertChildErrno(errno.EACCES, f'stat through 0700 root directory {directory}',
                              lambda: os.stat(os.path.join(directory, 'f')))
        self.assertChildErrno(errno.EACCES, f'listdir of 0700 root directory {directory}',
                              lambda: os.listdir(directory))

