#!/usr/bin/env python3
"""The workloads and measurements of backend_faults.sh, one phase per call.

  backend_faults.py outage MNT CLUSTER DAEMON HOW TIMEOUT MARGIN EXPECT
      Readers of cached files run while DAEMON (osd.0, mon.a) of CLUSTER is paused (HOW=pause,
      then resumed) or killed (HOW=kill, then started again). While it is down: cached reads must
      succeed with the right bytes; reads of uncached files and an fsync must fail with EIO
      (EXPECT=eio) or may succeed (EXPECT=any: the mon is down, the OSD still serves) within
      TIMEOUT + MARGIN seconds, never hang; statfs must answer at once with the last figures.
      Then the daemon comes back: uncached reads and the fsync must succeed without a remount.
  backend_faults.py failover MNT CLUSTER TIMEOUT
      Several readers check every byte of every file while one OSD of three is killed.
  backend_faults.py verify DIR SUMS
      Every file named in SUMS (sha256sum format, relative to DIR) has its bytes.

Figures are printed as "FIGURE name value" lines (seconds), for grep.
"""
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DAEMON_SH = os.path.join(HERE, '..', '..', 'deploy', 'dev-cluster', 'daemon.sh')


def fail(msg):
    # os._exit: reader threads (and a hung call's thread) must not keep the process alive.
    print(f'FAIL: {msg}', file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)


def figure(name, seconds):
    print(f'FIGURE {name} {seconds:.3f}', flush=True)


def sha(path, drop=False):
    """The file's SHA-256; with `drop`, its pages are dropped from the page cache afterwards,
    so that the next read of it reaches the daemon again."""
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
        if drop:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return h.hexdigest()


def load_sums(path):
    out = {}
    for line in open(path):
        digest, name = line.split(None, 1)
        out[name.strip().lstrip('*').removeprefix('./')] = digest
    return out


def daemon(cluster, action, name):
    subprocess.run([DAEMON_SH, cluster, action, name], check=True, timeout=120)


def timed(fn, limit):
    """Runs fn in a thread; returns (seconds, result or exception). A call still running after
    `limit` seconds is a hang: the test fails (the thread is left behind; the process exits)."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    t0 = time.monotonic()
    fut = pool.submit(fn)
    try:
        result = fut.result(timeout=limit)
    except concurrent.futures.TimeoutError:
        fail(f'{getattr(fn, "__name__", "a call")} hung for more than {limit:.0f} s')
    except OSError as e:
        result = e
    pool.shutdown(wait=False)
    return time.monotonic() - t0, result


class Readers:
    """Threads that read cached files whole, again and again, and check every byte."""

    def __init__(self, mnt, sums, names, threads=2):
        self.mnt, self.sums, self.names = mnt, sums, names
        self.stop = threading.Event()
        self.ok = 0
        self.errors = []
        self.worst = 0.0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]

    def run(self, i):
        k = i
        while not self.stop.is_set():
            name = self.names[k % len(self.names)]
            k += 1
            t0 = time.monotonic()
            try:
                good = sha(os.path.join(self.mnt, name), drop=True) == self.sums[name]
                err = None if good else f'{name}: wrong bytes'
            except OSError as e:
                err = f'{name}: {e}'
            took = time.monotonic() - t0
            with self.lock:
                self.worst = max(self.worst, took)
                if err:
                    self.errors.append(err)
                else:
                    self.ok += 1

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(120)
            if t.is_alive():
                fail('a reader of cached files hung')


def drop_caches(what='3'):
    # '1': the page cache only; the kernel keeps its dentries and inodes (so the daemon keeps
    # the names it was asked about).
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write(what)


def statfs_figures(mnt, limit):
    t0 = time.monotonic()
    took, st = timed(lambda: os.statvfs(mnt), limit)
    if isinstance(st, OSError):
        fail(f'statfs failed: {st}')
    return took, (st.f_blocks, st.f_bfree, st.f_files)


def outage(mnt, cluster, name, how, timeout, margin, expect):
    tag = f'{name}_{how}'
    sums = load_sums(os.path.join(mnt, '..', 'sums'))
    cached = sorted(n for n in sums if n.startswith('cached/'))
    cold = sorted(n for n in sums if n.startswith(f'cold/{tag}/'))
    limit = timeout + margin
    hang = timeout * 3 + 30  # a call still running then is a hang, whatever the margin

    # Warm: the cached files are read once (into the daemon's cache), the cold ones are only
    # looked up (stat), so the daemon knows their names but holds none of their bytes.
    for n in cached:
        if sha(os.path.join(mnt, n)) != sums[n]:
            fail(f'{n}: wrong bytes before the outage')
    for n in cold:
        os.stat(os.path.join(mnt, n))
    _, before = statfs_figures(mnt, hang)
    if before[0] == 0:
        fail('statfs reports no capacity before the outage (no mgr statistics?)')
    # A writer: 1 MiB written and fsynced while the cluster is up.
    out = os.path.join(mnt, 'out', tag)
    fd = os.open(out, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    first = os.urandom(1 << 20)
    os.write(fd, first)
    os.fsync(fd)
    drop_caches('1')  # every read below reaches the daemon

    with Readers(mnt, sums, cached) as readers:
        time.sleep(0.5)
        daemon(cluster, 'pause' if how == 'pause' else 'kill', name)
        t_down = time.monotonic()
        print(f'{tag}: {name} down', flush=True)

        # Uncached reads, all at once: each fails with EIO (or, EXPECT=any, gives the right
        # bytes) within the limit.
        def read_cold(n):
            def read():
                return sha(os.path.join(mnt, n))
            read.__name__ = f'read of uncached {n}'
            return timed(read, hang)
        # Two rounds: the first right after the daemon went down, the second once the daemon
        # knows the back end is not answering. A read waits one timeout at most: the first of its
        # calls that gets no answer starts the daemon's stale hold, after which names it knows are
        # served without asking the store and its chunk fetch is waited for
        # DataReader::kDownFetchWait, not a whole timeout (the margin covers that second).
        for rnd, names in (('first', cold[:2]), ('later', cold[2:])):
            with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
                results = list(pool.map(read_cold, names))
            worst_read = max(t for t, _ in results)
            for n, (t, r) in zip(names, results):
                if isinstance(r, OSError):
                    if r.errno != 5:
                        fail(f'{tag}: uncached read of {n} failed with {r}, not EIO')
                elif expect == 'eio':
                    fail(f'{tag}: uncached read of {n} succeeded with {name} down')
                elif r != sums[n]:
                    fail(f'{tag}: uncached read of {n} gave wrong bytes')
            outcomes = sorted({'EIO' if isinstance(r, OSError) else 'ok' for _, r in results})
            print(f'{tag}: uncached reads ({rnd}): {"/".join(outcomes)}, '
                  f'worst {worst_read:.2f} s', flush=True)
            figure(f'{tag}_uncached_read_{rnd}_worst', worst_read)
            if worst_read > limit:
                fail(f'{tag}: an uncached read took {worst_read:.2f} s > {limit} s')

        # fsync of 3 MiB written while down.
        second = os.urandom(3 << 20)
        os.write(fd, second)

        def fsync():
            os.fsync(fd)
        took, r = timed(fsync, hang)
        figure(f'{tag}_fsync', took)
        if isinstance(r, OSError):
            if r.errno != 5:
                fail(f'{tag}: fsync failed with {r}, not EIO')
            print(f'{tag}: fsync: EIO after {took:.2f} s', flush=True)
        elif expect == 'eio':
            fail(f'{tag}: fsync succeeded with {name} down')
        else:
            print(f'{tag}: fsync: ok after {took:.2f} s', flush=True)
        if took > limit:
            fail(f'{tag}: fsync took {took:.2f} s > {limit} s')

        # statfs: at once, the figures known before.
        worst_statfs = 0.0
        for _ in range(5):
            took, now = statfs_figures(mnt, hang)
            worst_statfs = max(worst_statfs, took)
            if now[0] != before[0]:
                fail(f'{tag}: statfs total blocks {now[0]} while down, {before[0]} before')
            time.sleep(0.3)
        figure(f'{tag}_statfs_worst', worst_statfs)
        if worst_statfs > 1.0:
            fail(f'{tag}: statfs took {worst_statfs:.2f} s with {name} down')
        time.sleep(1)  # the readers keep going a little longer
        down_for = time.monotonic() - t_down
        ok_while_down = readers.ok

        # Back: resume or start again; no remount.
        daemon(cluster, 'resume' if how == 'pause' else 'start', name)
        t_up = time.monotonic()
        print(f'{tag}: {name} back after {down_for:.1f} s', flush=True)

        def read_again(n):
            while True:
                try:
                    if sha(os.path.join(mnt, n)) != sums[n]:
                        fail(f'{tag}: {n} has wrong bytes after the outage')
                    return time.monotonic() - t_up
                except OSError:
                    if time.monotonic() - t_up > 120:
                        fail(f'{tag}: {n} still unreadable 120 s after {name} came back')
                    time.sleep(0.2)
        resumed = max(read_again(n) for n in cold)
        figure(f'{tag}_resume_reads', resumed)

        while True:
            try:
                os.fsync(fd)
                break
            except OSError as e:
                if time.monotonic() - t_up > 120:
                    fail(f'{tag}: fsync still fails 120 s after {name} came back: {e}')
                time.sleep(0.5)
        figure(f'{tag}_resume_fsync', time.monotonic() - t_up)
        os.close(fd)
        if sha(out) != hashlib.sha256(first + second).hexdigest():
            fail(f'{tag}: {out} does not hold what was written')

    if readers.errors:
        fail(f'{tag}: cached reads failed: {readers.errors[:3]} ({len(readers.errors)} in all)')
    if ok_while_down == 0:
        fail(f'{tag}: no cached read completed while {name} was down')
    print(f'{tag}: {readers.ok} cached reads, all right ({ok_while_down} with {name} down), '
          f'slowest {readers.worst:.2f} s', flush=True)
    figure(f'{tag}_cached_read_worst', readers.worst)
    with open(os.path.join(mnt, '..', 'sums'), 'a') as f:
        f.write(f'{hashlib.sha256(first + second).hexdigest()}  out/{tag}\n')


def backend_reads(mnt):
    return json.loads(os.getxattr(mnt, 'user.tierfs.cache_stats'))['backend_reads']


def failover(mnt, cluster, timeout):
    sums = load_sums(os.path.join(mnt, '..', 'sums'))
    names = sorted(sums)
    drop_caches()
    errors, done, worst = [], [0], [0.0]
    lock = threading.Lock()
    killed = threading.Event()
    killed_at = [0.0]

    def reader(i):
        # Every file in its own order, round after round, until 10 s after the kill (at least
        # two rounds); the cache is smaller than the files, so most reads reach the OSDs.
        rnd = 0
        while rnd < 2 or not killed.is_set() or time.monotonic() < killed_at[0] + 10:
            order = names[i:] + names[:i] if rnd % 2 == 0 else list(reversed(names))
            rnd += 1
            for n in order:
                t0 = time.monotonic()
                try:
                    good = sha(os.path.join(mnt, n), drop=True) == sums[n]
                    err = None if good else f'{n}: wrong bytes'
                except OSError as e:
                    err = f'{n}: {e}'
                with lock:
                    worst[0] = max(worst[0], time.monotonic() - t0)
                    if err:
                        errors.append(err)
                    else:
                        done[0] += 1

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(4)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(1.5)
    at_kill = backend_reads(mnt)
    daemon(cluster, 'kill', 'osd.1')
    killed_at[0] = time.monotonic()
    killed.set()
    print(f'failover: osd.1 killed {time.monotonic() - t0:.1f} s into the workload', flush=True)
    for t in threads:
        t.join(timeout * 4 + 120)
        if t.is_alive():
            fail('failover: a reader hung')
    took = time.monotonic() - t0
    if errors:
        fail(f'failover: {len(errors)} failed reads: {errors[:3]}')
    fetched = backend_reads(mnt) - at_kill
    print(f'failover: {done[0]} whole-file reads in {took:.1f} s, every byte right; '
          f'{fetched} chunks fetched from the OSDs after the kill; slowest read {worst[0]:.2f} s',
          flush=True)
    if fetched < 20:
        fail(f'failover: only {fetched} chunk reads reached the cluster after the kill')
    figure('failover_slowest_read', worst[0])


def verify(root, sums_file):
    sums = load_sums(sums_file)
    for n, digest in sorted(sums.items()):
        if sha(os.path.join(root, n)) != digest:
            fail(f'{n}: wrong bytes after the remount')
    print(f'verify: {len(sums)} files right', flush=True)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'outage':
        mnt, cluster, name, how, timeout, margin, expect = args
        outage(mnt, cluster, name, how, float(timeout), float(margin), expect)
    elif cmd == 'failover':
        failover(args[0], args[1], float(args[2]))
    elif cmd == 'verify':
        verify(args[0], args[1])
    else:
        fail(f'unknown command {cmd}')


if __name__ == '__main__':
    main()
