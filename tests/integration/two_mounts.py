#!/usr/bin/env python3
"""Two tierfs mounts of one volume, as on two GPU nodes: close-to-open visibility, and no reader
ever sees a mix of two versions of a file while the other node rewrites it.

Usage: two_mounts.py MOUNT_A MOUNT_B ATTR_TIMEOUT_SECONDS
"""
import hashlib
import os
import sys
import threading
import time

A, B, TIMEOUT = sys.argv[1], sys.argv[2], float(sys.argv[3])
SIZE = 6 << 20  # several 1 MiB chunks, so a mix of versions would show


def fail(msg):
    print(f'FAIL: {msg}', file=sys.stderr)
    sys.exit(1)


def settle():
    time.sleep(TIMEOUT * 2 + 0.1)  # the other node's cached attributes expire


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def close_to_open():
    data = os.urandom(SIZE + 12345)
    write(os.path.join(A, 'shared.bin'), data)
    settle()
    got = read(os.path.join(B, 'shared.bin'))
    if got != data:
        fail(f'B read {len(got)} bytes, not what A wrote ({len(data)} bytes)')
    data2 = os.urandom(SIZE // 2)
    write(os.path.join(B, 'shared.bin'), data2)
    settle()
    if hashlib.sha256(read(os.path.join(A, 'shared.bin'))).digest() != hashlib.sha256(data2).digest():
        fail('A does not see what B wrote after B closed the file')
    os.makedirs(os.path.join(A, 'd1/sub'))
    os.rename(os.path.join(A, 'shared.bin'), os.path.join(A, 'd1/sub/moved.bin'))
    settle()
    if read(os.path.join(B, 'd1/sub/moved.bin')) != data2:
        fail('B does not see the file A moved across directories')
    if os.path.exists(os.path.join(B, 'shared.bin')):
        fail('B still sees the old name after A renamed it')
    print('close-to-open: ok')


def no_mixed_versions():
    path_a, path_b = os.path.join(A, 'versions.bin'), os.path.join(B, 'versions.bin')
    write(path_a, bytes([0]) * SIZE)
    settle()
    stop = threading.Event()
    seen, errors = set(), []

    def reader():
        while not stop.is_set():
            try:
                data = read(path_b)
            except OSError as e:  # a reader may be told its old version is gone; never a mix
                errors.append(e.errno)
                continue
            values = set(data)
            if len(values) != 1 or len(data) != SIZE:
                stop.set()
                fail(f'B read a mix: {len(data)} bytes with values {sorted(values)[:8]}')
            seen.add(data[0])

    t = threading.Thread(target=reader)
    t.start()
    for version in range(1, 30):
        write(path_a, bytes([version]) * SIZE)
        time.sleep(TIMEOUT / 2)
    settle()
    stop.set()
    t.join()
    if len(seen) < 3:
        fail(f'B saw only versions {sorted(seen)} while A wrote 29: close-to-open is not working')
    print(f'no mixed versions: ok (B read {len(seen)} distinct versions, {len(errors)} errors)')


close_to_open()
no_mixed_versions()
