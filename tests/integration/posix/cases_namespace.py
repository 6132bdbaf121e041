"""The namespace: mkdir/rmdir/unlink, name rules, readdir, rename, symlinks, hard links."""

import errno
import os
import random
import stat

from posixlib import (CONFIG, LINK_REFUSED, FsTestCase, RENAME_NOREPLACE, current_umask,
                      have_renameat2, mode_of, read_file, renameat2, write_file)


class DirectoryTests(FsTestCase):

    def test_mkdir(self):
        path = self.path('dir')
        os.mkdir(path, 0o750)
        self.assertTrue(stat.S_ISDIR(os.stat(path).st_mode), f'{path} is not a directory')
        self.assertEqual(mode_of(path), 0o750 & ~current_umask(), f'mode of {path}')
        self.assertErrno(errno.EEXIST, f'mkdir of existing directory {path}', os.mkdir, path)
        write_file(self.path('file'), b'x')
        self.assertErrno(errno.EEXIST, 'mkdir over an existing file', os.mkdir, self.path('file'))
        self.assertErrno(errno.ENOENT, 'mkdir with a missing parent', os.mkdir,
                         self.path('nodir', 'sub'))
        self.assertErrno(errno.ENOTDIR, 'mkdir under a file', os.mkdir, self.path('file', 'sub'))

    def test_rmdir(self):
        os.mkdir(self.path('full'))
        write_file(self.path('full', 'f'), b'x')
        self.assertErrno(errno.ENOTEMPTY, 'rmdir of a non-empty directory', os.rmdir,
                         self.path('full'))
        self.assertFileContent(self.path('full', 'f'), b'x')
        write_file(self.path('file'), b'x')
        self.assertErrno(errno.ENOTDIR, 'rmdir of a file', os.rmdir, self.path('file'))
        self.assertErrno(errno.ENOENT, 'rmdir of a missing name', os.rmdir, self.path('missing'))
        os.mkdir(self.path('empty'))
        os.rmdir(self.path('empty'))
        self.assertMissing(self.path('empty'), 'rmdir succeeded')
        self.assertNames(self.dir, ['full', 'file'])

    def test_unlink(self):
        self.assertErrno(errno.ENOENT, 'unlink of a missing name', os.unlink, self.path('missing'))
        os.mkdir(self.path('dir'))
        self.assertErrno(errno.EISDIR, 'unlink of a directory (Linux: EISDIR)', os.unlink,
                         self.path('dir'))
        write_file(self.path('file'), b'x')
        os.unlink(self.path('file'))
        self.assertMissing(self.path('file'), 'unlink succeeded')
        self.assertErrno(errno.ENOENT, 'second unlink', os.unlink, self.path('file'))
        self.assertNames(self.dir, ['dir'])

    def test_path_through_a_file(self):
        write_file(self.path('file'), b'x')
        through = self.path('file', 'child')
        self.assertErrno(errno.ENOTDIR, 'open of file/child', os.open, through, os.O_RDONLY)
        self.assertErrno(errno.ENOTDIR, 'open O_CREAT of file/child', os.open, through,
                         os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertErrno(errno.ENOTDIR, 'stat of file/child', os.stat, through)
        self.assertErrno(errno.ENOTDIR, 'open O_DIRECTORY of a file', os.open,
                         self.path('file'), os.O_RDONLY | os.O_DIRECTORY)

    def test_open_directory_for_writing(self):
        path = self.path('dir')
        os.mkdir(path)
        self.assertErrno(errno.EISDIR, 'open O_WRONLY of a directory', os.open, path, os.O_WRONLY)
        self.assertErrno(errno.EISDIR, 'open O_RDWR of a directory', os.open, path, os.O_RDWR)
        fd = os.open(path, os.O_RDONLY)
        try:
            self.assertErrno(errno.EISDIR, 'read(2) on a directory fd', os.read, fd, 10)
        finally:
            os.close(fd)


class NameTests(FsTestCase):

    def test_name_length_limit(self):
        longest = 'n' * 255
        write_file(self.path(longest), b'255')
        self.assertFileContent(self.path(longest), b'255')
        self.assertNames(self.dir, [longest])
        too_long = self.path('n' * 256)
        self.assertErrno(errno.ENAMETOOLONG, 'create with a 256-byte name', os.open, too_long,
                         os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertErrno(errno.ENAMETOOLONG, 'mkdir with a 256-byte name', os.mkdir, too_long)
        self.assertErrno(errno.ENAMETOOLONG, 'rename to a 256-byte name', os.rename,
                         self.path(longest), too_long)
        # The limit is in bytes, not characters: 85 x 3-byte '数' = 255 bytes, 86 = 258.
        write_file(self.path('数' * 85), b'cjk')
        self.assertErrno(errno.ENAMETOOLONG, 'create with a 258-byte UTF-8 name', os.open,
                         self.path('数' * 86), os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertNames(self.dir, [longest, '数' * 85])

    def test_unusual_names(self):
        names = ['with space', ' leading', 'trailing ', 'new\nline', 'tab\there',
                 'données 数据 🚀', '-rf', '..foo', '.hidden', '...', 'back\\slash',
                 'quote"s\'', '*?[glob]', '$HOME', 'a:b', '#hash%41', '\x01ctrl', '~']
        for i, name in enumerate(names):
            write_file(self.path(name), f'content {i}'.encode())
        os.mkdir(self.path('données 数据 🚀.d'))
        write_file(self.path('données 数据 🚀.d', '-rf'), b'nested')
        self.assertNames(self.dir, names + ['données 数据 🚀.d'])
        for i, name in enumerate(names):
            self.assertFileContent(self.path(name), f'content {i}'.encode())
        self.assertFileContent(self.path('données 数据 🚀.d', '-rf'), b'nested')

    def test_name_that_is_not_utf8(self):
        """Linux names are bytes; a name that is not valid UTF-8 must round-trip exactly."""
        name = b'latin1-caf\xe9-\xff'
        path = os.path.join(os.fsencode(self.dir), name)
        write_file(path, b'bytes')
        self.assertEqual(os.listdir(os.fsencode(self.dir)), [name], 'listdir (bytes)')
        self.assertEqual(read_file(path), b'bytes', f'read of {path!r}')


class ReaddirTests(FsTestCase):

    def test_listdir_and_dtype(self):
        files = [f'file{i}' for i in range(30)]
        dirs = [f'dir{i}' for i in range(10)]
        for name in files:
            write_file(self.path(name), name.encode())
        for name in dirs:
            os.mkdir(self.path(name))
        links = {'link-file': 'file0', 'link-dir': 'dir0', 'link-dangling': 'nowhere'}
        for name, target in links.items():
            os.symlink(target, self.path(name))
        self.assertNames(self.dir, files + dirs + list(links))

        kinds = {}
        for entry in os.scandir(self.dir):
            kinds[entry.name] = (entry.is_file(follow_symlinks=False),
                                 entry.is_dir(follow_symlinks=False), entry.is_symlink())
        for name in files:
            self.assertEqual(kinds[name], (True, False, False), f'scandir type of file {name}')
        for name in dirs:
            self.assertEqual(kinds[name], (False, True, False), f'scandir type of dir {name}')
        for name in links:
            self.assertEqual(kinds[name], (False, False, True), f'scandir type of link {name}')
        entries = {e.name: e for e in os.scandir(self.dir)}
        self.assertTrue(entries['link-dir'].is_dir(), 'scandir: symlink to dir, followed')
        self.assertTrue(entries['link-file'].is_file(), 'scandir: symlink to file, followed')

        for name in files[::2] + dirs[::3]:
            (os.rmdir if name.startswith('dir') else os.unlink)(self.path(name))
        self.assertNames(self.dir, files[1::2] + [d for d in dirs if d not in dirs[::3]]
                         + list(links))

    def test_empty_directory(self):
        os.mkdir(self.path('empty'))
        self.assertEqual(os.listdir(self.path('empty')), [], 'listdir of a new directory')
        self.assertEqual(list(os.scandir(self.path('empty'))), [], 'scandir of a new directory')

    def test_twenty_thousand_entries(self):
        count = 20000
        big = self.path('big')
        os.mkdir(big)
        # Varying lengths so the directory spans many readdir buffers.
        names = [f'{i:05d}-' + 'x' * (i % 60) for i in range(count)]
        for name in names:
            os.close(os.open(os.path.join(big, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        self.assertNames(big, names)
        self.assertEqual(sum(1 for _ in os.scandir(big)), count, f'scandir count of {big}')
        for name in random.Random(1).sample(names, 300):
            st = os.stat(os.path.join(big, name))
            self.assertTrue(stat.S_ISREG(st.st_mode) and st.st_size == 0,
                            f'stat {big}/{name}: mode {st.st_mode:o} size {st.st_size}')
        for name in names:
            os.unlink(os.path.join(big, name))
        self.assertEqual(os.listdir(big), [], f'{big} after unlinking all entries')
        os.rmdir(big)


class RenameTests(FsTestCase):

    def make(self, name, data):
        write_file(self.path(name), data)
        return os.stat(self.path(name))

    def test_rename_within_directory(self):
        before = self.make('old', b'payload')
        os.chmod(self.path('old'), 0o640)
        os.rename(self.path('old'), self.path('new'))
        self.assertMissing(self.path('old'), 'renamed away')
        self.assertFileContent(self.path('new'), b'payload')
        self.assertEqual(mode_of(self.path('new')), 0o640, 'mode after rename')
        self.assertEqual(os.stat(self.path('new')).st_ino, before.st_ino,
                         'rename must keep the inode number')
        self.assertNames(self.dir, ['new'])

    def test_rename_across_directories(self):
        os.mkdir(self.path('a'))
        os.mkdir(self.path('b'))
        write_file(self.path('a', 'f'), b'moved')
        os.rename(self.path('a', 'f'), self.path('b', 'g'))
        self.assertNames(self.path('a'), [])
        self.assertNames(self.path('b'), ['g'])
        self.assertFileContent(self.path('b', 'g'), b'moved')

    def test_rename_over_existing_file(self):
        self.make('src', b'new content')
        self.make('dst', b'old content that is longer')
        os.rename(self.path('src'), self.path('dst'))
        self.assertFileContent(self.path('dst'), b'new content')
        self.assertNames(self.dir, ['dst'])

    def test_replaced_file_stays_readable_while_open(self):
        self.make('src', b'new')
        self.make('dst', b'old')
        fd = os.open(self.path('dst'), os.O_RDONLY)
        try:
            os.rename(self.path('src'), self.path('dst'))
            self.assertEqual(os.pread(fd, 100, 0), b'old',
                             'an fd opened before the rename must still read the old file')
        finally:
            os.close(fd)
        self.assertFileContent(self.path('dst'), b'new')

    def test_rename_directory_with_contents(self):
        os.makedirs(self.path('d', 'sub'))
        write_file(self.path('d', 'sub', 'f'), b'deep')
        os.mkdir(self.path('other'))
        os.rename(self.path('d'), self.path('other', 'moved'))
        self.assertMissing(self.path('d'), 'directory renamed away')
        self.assertFileContent(self.path('other', 'moved', 'sub', 'f'), b'deep')
        # A second rename of the parent: paths cached under the old name must not be used.
        os.rename(self.path('other'), self.path('other2'))
        self.assertFileContent(self.path('other2', 'moved', 'sub', 'f'), b'deep')
        self.assertNames(self.dir, ['other2'])

    def test_rename_directory_over_empty_directory(self):
        os.mkdir(self.path('src'))
        write_file(self.path('src', 'f'), b'x')
        os.mkdir(self.path('empty'))
        os.rename(self.path('src'), self.path('empty'))
        self.assertNames(self.dir, ['empty'])
        self.assertNames(self.path('empty'), ['f'])

    def test_rename_directory_over_non_empty_directory(self):
        os.mkdir(self.path('src'))
        os.mkdir(self.path('full'))
        write_file(self.path('full', 'keep'), b'keep')
        self.assertErrno(errno.ENOTEMPTY, 'rename dir over a non-empty dir', os.rename,
                         self.path('src'), self.path('full'))
        self.assertFileContent(self.path('full', 'keep'), b'keep')
        self.assertNames(self.dir, ['src', 'full'])

    def test_rename_type_mismatch(self):
        self.make('file', b'f')
        os.mkdir(self.path('dir'))
        self.assertErrno(errno.EISDIR, 'rename file over a directory', os.rename,
                         self.path('file'), self.path('dir'))
        self.assertErrno(errno.ENOTDIR, 'rename directory over a file', os.rename,
                         self.path('dir'), self.path('file'))
        self.assertFileContent(self.path('file'), b'f')
        self.assertNames(self.dir, ['file', 'dir'])

    def test_rename_invalid(self):
        os.makedirs(self.path('a', 'b'))
        self.assertErrno(errno.EINVAL, 'rename a dir into its own subdirectory', os.rename,
                         self.path('a'), self.path('a', 'b', 'c'))
        self.assertErrno(errno.ENOENT, 'rename of a missing source', os.rename,
                         self.path('missing'), self.path('x'))
        self.assertErrno(errno.ENOENT, 'rename into a missing directory', os.rename,
                         self.path('a'), self.path('nodir', 'x'))
        self.assertNames(self.dir, ['a'])
        self.assertNames(self.path('a'), ['b'])

    def test_rename_to_itself(self):
        self.make('file', b'same')
        os.rename(self.path('file'), self.path('file'))
        self.assertFileContent(self.path('file'), b'same')
        os.mkdir(self.path('dir'))
        write_file(self.path('dir', 'f'), b'in dir')
        os.rename(self.path('dir'), self.path('dir'))
        self.assertFileContent(self.path('dir', 'f'), b'in dir')
        self.assertNames(self.dir, ['file', 'dir'])

    def test_renameat2_noreplace(self):
        if not have_renameat2():
            self.skipTest('libc has no renameat2')
        self.make('src', b'src')
        self.make('dst', b'dst')
        self.assertErrno(errno.EEXIST, 'renameat2(RENAME_NOREPLACE) onto an existing file',
                         renameat2, self.path('src'), self.path('dst'), RENAME_NOREPLACE)
        self.assertFileContent(self.path('src'), b'src')
        self.assertFileContent(self.path('dst'), b'dst')
        renameat2(self.path('src'), self.path('fresh'), RENAME_NOREPLACE)
        self.assertFileContent(self.path('fresh'), b'src')
        self.assertNames(self.dir, ['fresh', 'dst'])


class SymlinkTests(FsTestCase):

    def test_absolute_relative_and_dangling(self):
        os.mkdir(self.path('d'))
        write_file(self.path('d', 'f'), b'target data')
        absolute = self.path('d', 'f')
        cases = {'abs': absolute, 'rel': 'd/f', 'up': '../' + os.path.basename(self.dir) + '/d/f'}
        for name, target in cases.items():
            link = self.path(name)
            os.symlink(target, link)
            self.assertEqual(os.readlink(link), target, f'readlink {link}')
            self.assertFileContent(link, b'target data')
            st = os.lstat(link)
            self.assertTrue(stat.S_ISLNK(st.st_mode), f'lstat {link}: not a symlink')
            self.assertEqual(st.st_size, len(os.fsencode(target)), f'lstat {link}: st_size')
            self.assertTrue(stat.S_ISREG(os.stat(link).st_mode), f'stat {link} must follow')

        os.symlink('d', self.path('dirlink'))
        self.assertNames(self.path('dirlink'), ['f'])

        dangling = self.path('dangling')
        os.symlink('does/not/exist', dangling)
        self.assertEqual(os.readlink(dangling), 'does/not/exist', 'readlink of dangling link')
        self.assertTrue(stat.S_ISLNK(os.lstat(dangling).st_mode), 'lstat of dangling link')
        self.assertErrno(errno.ENOENT, 'stat of dangling link', os.stat, dangling)
        self.assertErrno(errno.ENOENT, 'open of dangling link', os.open, dangling, os.O_RDONLY)

    def test_symlink_errors(self):
        write_file(self.path('file'), b'x')
        os.symlink('file', self.path('link'))
        self.assertErrno(errno.EEXIST, 'symlink over an existing file', os.symlink, 't',
                         self.path('file'))
        self.assertErrno(errno.EEXIST, 'symlink over an existing link', os.symlink, 't',
                         self.path('link'))
        self.assertEqual(os.readlink(self.path('link')), 'file', 'link changed by failed symlink')
        self.assertErrno(errno.EINVAL, 'readlink of a regular file', os.readlink,
                         self.path('file'))
        self.assertErrno(errno.ELOOP, 'open O_NOFOLLOW of a symlink', os.open, self.path('link'),
                         os.O_RDONLY | os.O_NOFOLLOW)

    def test_unusual_targets(self):
        targets = {'long': 'x/' * 2047 + 'y',          # 4095 bytes: the longest Linux allows
                   'utf8': 'données 数据 🚀/file name', 'space': ' a b '}
        for name, target in targets.items():
            os.symlink(target, self.path(name))
            self.assertEqual(os.readlink(self.path(name)), target, f'readlink {name}')

    def test_unlink_and_rename_act_on_the_link(self):
        write_file(self.path('target'), b'kept')
        os.symlink('target', self.path('link'))
        os.rename(self.path('link'), self.path('link2'))
        self.assertEqual(os.readlink(self.path('link2')), 'target', 'renamed link')
        os.unlink(self.path('link2'))
        self.assertFileContent(self.path('target'), b'kept')
        self.assertNames(self.dir, ['target'])


class HardLinkTests(FsTestCase):
    """tierfs refuses hard links (DESIGN.md); elsewhere they must work."""

    def test_link(self):
        src, dst = self.path('file'), self.path('alias')
        write_file(src, b'shared')
        if CONFIG['tierfs']:
            self.assertErrno(LINK_REFUSED, 'link() on tierfs', os.link, src, dst)
            self.assertMissing(dst, 'a refused link must create nothing')
            self.assertEqual(os.stat(src).st_nlink, 1, 'st_nlink after refused link')
            self.assertNames(self.dir, ['file'])
            return
        os.link(src, dst)
        a, b = os.stat(src), os.stat(dst)
        self.assertEqual((a.st_ino, a.st_nlink), (b.st_ino, 2), 'hard link: same inode, nlink 2')
        write_file(dst, b'changed via alias')
        self.assertFileContent(src, b'changed via alias')
        os.unlink(src)
        self.assertFileContent(dst, b'changed via alias')
        self.assertEqual(os.stat(dst).st_nlink, 1, 'st_nlink after unlinking the other name')

    def test_link_errors(self):
        write_file(self.path('file'), b'x')
        write_file(self.path('other'), b'y')
        os.mkdir(self.path('dir'))
        self.assertErrno(errno.EPERM, 'link of a directory', os.link, self.path('dir'),
                         self.path('dirlink'))
        self.assertErrno(errno.EEXIST, 'link onto an existing name', os.link, self.path('file'),
                         self.path('other'))
        self.assertErrno(errno.ENOENT, 'link of a missing file', os.link, self.path('missing'),
                         self.path('new'))
        self.assertNames(self.dir, ['file', 'other', 'dir'])

    def test_rename_between_links_of_one_file_is_a_no_op(self):
        if CONFIG['tierfs']:
            self.skipTest('tierfs has no hard links')
        write_file(self.path('a'), b'one inode')
        os.link(self.path('a'), self.path('b'))
        os.rename(self.path('a'), self.path('b'))  # POSIX: same file, so nothing happens
        self.assertNames(self.dir, ['a', 'b'])
        self.assertFileContent(self.path('b'), b'one inode')
