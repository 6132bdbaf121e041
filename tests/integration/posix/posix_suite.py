#!/usr/bin/env python3
"""Black-box POSIX test suite for tierfs, runnable against any directory.

    python3 posix_suite.py --mount DIR [--tierfs] [--other-users] [--big-size 2G]
                           [unittest options: -k PATTERN, -f, -q, TEST_NAME ...]

Every test works in its own fresh subdirectory of DIR and removes it at the end. The exit
status is non-zero if any test fails or errors (or if no test matched -k). The tests live in
cases_*.py next to this file; posixlib.py holds the shared helpers.
"""

import argparse
import os
import sys
import time
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree

import cases_attrs  # noqa: E402 (after the line above on purpose)
import cases_files
import cases_namespace
import cases_workloads
import posixlib

CASE_MODULES = (cases_files, cases_namespace, cases_attrs, cases_workloads)
DURATIONS = []  # (seconds, test id)


def load_tests(loader, standard_tests, pattern):
    """unittest's hook: collect the tests of every cases_* module (-k filtering still applies)."""
    suite = unittest.TestSuite()
    for module in CASE_MODULES:
        suite.addTests(loader.loadTestsFromModule(module))
    return suite


class TimedResult(unittest.TextTestResult):
    """Records how long each test took, to list the slowest at the end."""

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        DURATIONS.append((time.monotonic() - self._started, test.id()))
        super().stopTest(test)


class TimedRunner(unittest.TextTestRunner):
    resultclass = TimedResult


def mount_fstype(path):
    """Filesystem type of the mount holding path, from /proc/self/mountinfo ('' if unknown)."""
    path = os.path.realpath(path)
    best, fstype = '', ''
    try:
        with open('/proc/self/mountinfo') as f:
            for line in f:
                fields = line.split()
                mount_point = fields[4].replace('\\040', ' ')
                after_dash = fields[fields.index('-') + 1]
                inside = path == mount_point or path.startswith(mount_point.rstrip('/') + '/')
                if inside and len(mount_point) >= len(best):
                    best, fstype = mount_point, after_dash
    except OSError:
        pass
    return fstype


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Black-box POSIX tests against a mounted filesystem.',
        epilog='Other arguments go to unittest, e.g. -k rename, -f, -q, '
               'cases_namespace.RenameTests.test_rename_within_directory',
        allow_abbrev=False)
    parser.add_argument('--mount', required=True, help='directory to test in (e.g. a tierfs mount)')
    parser.add_argument('--tierfs', action='store_true',
                        help='expect tierfs behaviour: hard links refused with EPERM/ENOTSUP')
    parser.add_argument('--other-users', action='store_true',
                        help='run the permission tests as uid/gid 65534 (needs root)')
    parser.add_argument('--big-size', default='2G', type=posixlib.parse_size,
                        help='size of the big-file test, e.g. 64M, 2G (default 2G)')
    return parser.parse_known_args(argv)


def main(argv):
    args, unittest_args = parse_args(argv[1:])
    mount = os.path.abspath(args.mount)
    if not os.path.isdir(mount) or not os.access(mount, os.W_OK | os.X_OK):
        sys.exit(f'posix_suite: {mount} is not a writable directory')
    posixlib.CONFIG.update(mount=mount, tierfs=args.tierfs, other_users=args.other_users,
                           big_size=args.big_size)
    os.umask(0o022)  # the mode assertions assume it
    fstype = mount_fstype(mount)
    print(f'posix_suite: testing in {mount} (filesystem type {fstype or "unknown"}), '
          f'tierfs={args.tierfs}, other-users={args.other_users}, big-size={args.big_size}',
          file=sys.stderr)
    if args.tierfs and not fstype.startswith('fuse'):
        print(f'posix_suite: warning: --tierfs given but {mount} is not a FUSE mount',
              file=sys.stderr)

    program = unittest.main(module='__main__', argv=[argv[0]] + unittest_args,
                            testRunner=TimedRunner, verbosity=2, exit=False)
    report(program.result)
    if program.result.testsRun == 0:
        print('posix_suite: no test ran (does -k match anything?)', file=sys.stderr)
        return 1
    return 0 if program.result.wasSuccessful() else 1


def report(result):
    slowest = sorted(DURATIONS, reverse=True)[:8]
    if slowest:
        print('\nslowest tests:', file=sys.stderr)
    for seconds, test_id in slowest:
        print(f'  {seconds:7.2f} s  {test_id}', file=sys.stderr)
    for note in posixlib.NOTES:
        print(f'note: {note}', file=sys.stderr)
    if result.skipped:
        print(f'{len(result.skipped)} skipped:', file=sys.stderr)
        for test, reason in result.skipped:
            print(f'  {test.id()}: {reason}', file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
