#!/usr/bin/env python3
"""Seeded crash runs: SIGKILL the daemon at a random moment of a mixed workload, many times.

Each run mounts the volume (with a cache device), reads a few static files so that they are
sealed on the device, runs a seeded mix of operations (create, overwrite whole files,
append+fsync, a rewrite left unsynced on an open descriptor, fsync/close of it, rename within
and across directories, unlink, mkdir; small and multi-chunk files) and SIGKILLs the daemon
while operation K is in flight (K and a delay after its start drawn from the run's seed). Then:

- the daemon is started again on the dead mount point (it replaces it);
- the static files are read: all from the cache device (0 back-end reads: no rescan, the index
  survived the kill);
- every file is checked against the model: a file whose last write was acknowledged (close or
  fsync returned) has exactly that content; a file written since (unsynced, or by the operation
  the kill interrupted) has its old or its new content, never anything else; files and
  directories exist or not as the model allows;
- the daemon is stopped cleanly and `tierfs fsck --deep` reports no problem, `--repair` with
  no grace period (orphans of the interrupted uploads) ends clean, and a check after it is
  clean.

Usage: crash_runs.py TIERFS CLIENT_ENV [--seed N] [--runs N]
The seed defaults to $TIERFS_CRASH_SEED, else a fixed value; it is printed with any failure.
Runs share one volume: later runs start from what the earlier ones left.
"""

import argparse
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CHUNK = 1 << 20
DEFAULT_SEED = 20261203
STATIC = ["static/a.bin", "static/b.bin", "static/c.bin"]


def digest(data):
    return None if data is None else hashlib.sha256(data).hexdigest()[:12]


def describe(states):
    return ", ".join("absent" if s is None else f"{len(s)} bytes {digest(s)}" for s in states)


class Daemon:
    """A `tierfs mount -f` in the background; its log in work/log.N."""

    def __init__(self, tierfs, flags, mnt, work):
        self.tierfs, self.flags, self.mnt, self.work = tierfs, flags, mnt, work
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.log_path = os.path.join(self.work, f"log.{self.starts}")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.tierfs, "mount", "-f", *self.flags, self.mnt],
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tierfs mount exited with {self.proc.returncode}: {self.log()}")
            try:
                os.getxattr(self.mnt, "user.tierfs.cache_stats")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"the mount did not answer in 30 s: {self.log()}")

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def stats(self):
        return json.loads(os.getxattr(self.mnt, "user.tierfs.cache_stats"))

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()

    def stop(self):
        """Unmounts and waits; the daemon must exit 0."""
        for _ in range(50):
            if subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.2)
        rc = self.proc.wait(timeout=60)
        if rc != 0:
            raise RuntimeError(f"tierfs mount exited with {rc} at unmount: {self.log()}")

    def cleanup(self):
        self.kill()
        for cmd in (["fusermount3", "-u", self.mnt], ["umount", "-l", self.mnt]):
            if os.path.ismount(self.mnt) or is_listed_mount(self.mnt):
                subprocess.run(cmd, stderr=subprocess.DEVNULL)


def is_listed_mount(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


class Model:
    """What each path may hold after a crash: a list of allowed contents (None: absent)."""

    def __init__(self):
        self.files = {}  # path -> [bytes | None]
        self.dirs = {}  # path -> [True | False]
        self.open_fds = {}  # path -> (fd, pending content): rewritten, not yet synced

    def definite(self, path):
        s = self.files.get(path)
        return s is not None and len(s) == 1 and s[0] is not None and path not in self.open_fds

    def definite_files(self):
        return sorted(p for p in self.files if self.definite(p) and not p.startswith("static/"))

    def definite_dirs(self):
        return sorted(d for d, s in self.dirs.items() if s == [True] and not d.startswith("static"))


class Workload:
    """The seeded operations of one run; each is applied to the model when it completes, or
    with both outcomes allowed when it fails (the kill interrupted it)."""

    def __init__(self, rng, model, mnt, tag):
        self.rng, self.m, self.mnt, self.tag = rng, model, mnt, tag
        self.counter = 0
        self.log = []

    def content(self, small):
        self.counter += 1
        size = self.rng.randint(0, 64 << 10) if small else self.rng.randint(CHUNK, 3 * CHUNK + CHUNK // 2)
        seed = f"{self.tag}.{self.counter}"
        if self.rng.random() < 0.2:  # compressible: exercises the zstd frames
            line = f"{seed} compressible line\n".encode()
            return (line * (size // len(line) + 1))[:size]
        return random.Random(seed).randbytes(size)

    def path(self, p):
        return os.path.join(self.mnt, p)

    def new_name(self):
        self.counter += 1
        return f"{self.rng.choice([''] + [d + '/' for d in self.m.definite_dirs()])}f{self.tag}_{self.counter}"

    def choose(self):
        """One operation: (name, function applying it, function for when it is interrupted)."""
        m, rng = self.m, self.rng
        files = m.definite_files()
        ops = ["create_small", "create_small", "create_big", "mkdir"]
        if files:
            ops += ["overwrite", "overwrite", "append_fsync", "append_fsync", "patch_fsync",
                    "truncate", "rename", "unlink"]
            if len(files) > 40:  # keep the tree (and the time a run takes) bounded
                ops += ["unlink"] * 4
            if len(m.open_fds) < 2:
                ops += ["unsynced", "unsynced"]
        if m.open_fds:
            ops += ["sync_fd", "close_fd"]
        if self.movable_dirs():
            ops += ["rename_dir"]
        op = rng.choice(ops)
        return getattr(self, "op_" + op)(files)

    def write_file(self, p, data, flags):
        fd = os.open(self.path(p), flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            return fd
        except BaseException:
            os.close(fd)
            raise

    def op_create_small(self, files, small=True):
        p, data = self.new_name(), self.content(small)

        def run():
            os.close(self.write_file(p, data, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            self.m.files[p] = [data]

        def interrupted():
            self.m.files[p] = [None, b"", data]

        return f"create {p} ({len(data)} bytes)", run, interrupted

    def op_create_big(self, files):
        return self.op_create_small(files, small=False)

    def op_mkdir(self, files):
        self.counter += 1
        parent = self.rng.choice([""] + [d + "/" for d in self.m.definite_dirs()])
        d = f"{parent}d{self.tag}_{self.counter}"
        if d.count("/") > 2:
            d = f"d{self.tag}_{self.counter}"

        def run():
            os.mkdir(self.path(d))
            self.m.dirs[d] = [True]

        def interrupted():
            self.m.dirs[d] = [False, True]

        return f"mkdir {d}", run, interrupted

    def op_overwrite(self, files):
        p = self.rng.choice(files)
        old, data = self.m.files[p][0], self.content(self.rng.random() < 0.6)

        def run():
            os.close(self.write_file(p, data, os.O_WRONLY | os.O_TRUNC))
            self.m.files[p] = [data]

        def interrupted():
            self.m.files[p] = [old, data]

        return f"overwrite {p} ({len(old)} -> {len(data)} bytes)", run, interrupted

    def op_append_fsync(self, files):
        p = self.rng.choice(files)
        old = self.m.files[p][0]
        extra = self.content(True) if self.rng.random() < 0.7 else self.content(False)[: CHUNK + 4321]

        def run():
            fd = self.write_file(p, extra, os.O_WRONLY | os.O_APPEND)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self.m.files[p] = [old + extra]

        def interrupted():
            self.m.files[p] = [old, old + extra]

        return f"append+fsync {p} ({len(old)} + {len(extra)} bytes)", run, interrupted

    def op_patch_fsync(self, files):
        """Bytes rewritten in the middle (within a chunk or across chunk boundaries), fsynced."""
        p = self.rng.choice(files)
        old = self.m.files[p][0]
        at = self.rng.randint(0, len(old))
        patch = self.content(True)[: self.rng.choice([100, 5000, CHUNK + 999])]
        new = old[:at] + patch + old[at + len(patch):]
        if len(new) < len(old):
            new += old[len(new):]

        def run():
            fd = os.open(self.path(p), os.O_WRONLY)
            try:
                view = memoryview(patch)
                pos = at
                while view:
                    n = os.pwrite(fd, view, pos)
                    view, pos = view[n:], pos + n
                os.fsync(fd)
            finally:
                os.close(fd)
            self.m.files[p] = [new]

        def interrupted():
            self.m.files[p] = [old, new]

        return f"patch+fsync {p} ({len(patch)} bytes at {at} of {len(old)})", run, interrupted

    def op_truncate(self, files):
        p = self.rng.choice(files)
        old = self.m.files[p][0]
        size = self.rng.choice([0, len(old) // 2, len(old) + 5000, self.rng.randint(0, 3 * CHUNK)])
        new = old[:size] + b"\0" * max(0, size - len(old))

        def run():
            os.truncate(self.path(p), size)
            self.m.files[p] = [new]

        def interrupted():
            self.m.files[p] = [old, new]

        return f"truncate {p} ({len(old)} -> {size} bytes)", run, interrupted

    def op_unsynced(self, files):
        p = self.rng.choice(files)
        old, data = self.m.files[p][0], self.content(self.rng.random() < 0.5)

        def run():
            # The rewrite stays on an open descriptor: neither closed nor synced.
            self.m.files[p] = [old, data]
            fd = self.write_file(p, data, os.O_WRONLY | os.O_TRUNC)
            self.m.open_fds[p] = (fd, data)

        def interrupted():
            self.m.files[p] = [old, data]

        return f"rewrite {p} without fsync ({len(old)} -> {len(data)} bytes, kept open)", run, interrupted

    def op_sync_fd(self, files, close_only=False):
        p = self.rng.choice(sorted(self.m.open_fds))
        fd, data = self.m.open_fds[p]

        def run():
            del self.m.open_fds[p]
            try:
                if not close_only:
                    os.fsync(fd)
            finally:
                os.close(fd)
            self.m.files[p] = [data]

        def interrupted():
            pass  # still [old, data]

        return f"{'close' if close_only else 'fsync+close'} {p}", run, interrupted

    def op_close_fd(self, files):
        return self.op_sync_fd(files, close_only=True)

    def op_rename(self, files):
        # A file rewritten on a descriptor still open (not synced) may be renamed too: its
        # later fsync commits to the new name.
        a = self.rng.choice(files + sorted(self.m.open_fds))
        if self.rng.random() < 0.3 and len(files) > 1:
            b = self.rng.choice([f for f in files if f != a])  # replaces a file
        else:
            b = self.new_name()  # maybe into another directory (an intent record)
        old_a, old_b = self.m.files[a], self.m.files.get(b, [None])

        def run():
            os.rename(self.path(a), self.path(b))
            self.m.files[b] = old_a
            self.m.files[a] = [None]
            if a in self.m.open_fds:
                self.m.open_fds[b] = self.m.open_fds.pop(a)

        def interrupted():
            self.m.files[a] = old_a + [None]
            self.m.files[b] = old_b + old_a

        return f"rename {a} -> {b}", run, interrupted

    def movable_dirs(self):
        return [d for d in self.m.definite_dirs()
                if not any(p.startswith(d + "/") for p in self.m.open_fds)
                and all(s == [True] for e, s in self.m.dirs.items() if e.startswith(d + "/"))]

    def op_rename_dir(self, files):
        """A directory and everything in it moved under another parent (an intent record)."""
        d = self.rng.choice(self.movable_dirs())
        self.counter += 1
        parents = [p for p in self.m.definite_dirs() if p != d and not p.startswith(d + "/")]
        to = f"{self.rng.choice([''] + [p + '/' for p in parents])}m{self.tag}_{self.counter}"
        if to.count("/") > 3:
            to = f"m{self.tag}_{self.counter}"
        moved = lambda p: to + p[len(d):]
        inside = lambda p: p == d or p.startswith(d + "/")
        old_files = {p: v for p, v in self.m.files.items() if inside(p)}
        old_dirs = {p: v for p, v in self.m.dirs.items() if inside(p)}

        def run():
            os.rename(self.path(d), self.path(to))
            for p, v in old_files.items():
                self.m.files[p], self.m.files[moved(p)] = [None], v
            for p, v in old_dirs.items():
                del self.m.dirs[p]
                self.m.dirs[moved(p)] = v

        def interrupted():
            for p, v in old_files.items():
                self.m.files[p] = v + [None]
                self.m.files[moved(p)] = v + [None]
            for p in old_dirs:
                self.m.dirs[p] = [True, False]
                self.m.dirs[moved(p)] = [True, False]

        return f"rename directory {d} -> {to} ({len(old_files)} files)", run, interrupted

    def op_unlink(self, files):
        p = self.rng.choice(files)
        old = self.m.files[p]

        def run():
            os.unlink(self.path(p))
            self.m.files[p] = [None]

        def interrupted():
            self.m.files[p] = old + [None]

        return f"unlink {p}", run, interrupted


def wait_dead(mnt):
    """Seconds until the killed daemon's mount answers ENOTCONN (the kernel aborts the
    connection when the last /dev/fuse descriptor closes)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20:
        try:
            os.stat(mnt)
        except OSError as e:
            if e.errno == errno.ENOTCONN:
                return time.monotonic() - t0
        time.sleep(0.01)
    raise RuntimeError("the killed daemon's mount still answers after 20 s")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_tree(model, mnt):
    """Compares the mount with the model; returns the problems, and adopts what was found."""
    problems = []
    found_files, found_dirs = {}, set()
    for root, dirs, names in os.walk(mnt):
        rel = os.path.relpath(root, mnt)
        for d in dirs:
            found_dirs.add(d if rel == "." else f"{rel}/{d}")
        for n in names:
            p = n if rel == "." else f"{rel}/{n}"
            found_files[p] = read(os.path.join(root, n))
    for p, data in sorted(found_files.items()):
        allowed = model.files.get(p)
        if allowed is None:
            problems.append(f"{p}: unexpected file ({len(data)} bytes {digest(data)})")
        elif data not in allowed:
            problems.append(f"{p}: {len(data)} bytes {digest(data)}, allowed: {describe(allowed)}")
    for p, allowed in sorted(model.files.items()):
        if p not in found_files and None not in allowed:
            problems.append(f"{p}: missing, allowed: {describe(allowed)}")
    for d in sorted(found_dirs):
        if True not in model.dirs.get(d, [False]):
            problems.append(f"{d}/: unexpected directory")
    for d, allowed in sorted(model.dirs.items()):
        if d not in found_dirs and False not in allowed:
            problems.append(f"{d}/: missing directory")
    model.files = {p: [data] for p, data in found_files.items()}
    model.dirs = {d: [True] for d in found_dirs}
    return problems, len(found_files)


def fsck(tierfs, flags, *extra):
    r = subprocess.run([tierfs, "fsck", *flags, *extra], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tierfs")
    ap.add_argument("client_env")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("TIERFS_CRASH_SEED", DEFAULT_SEED)))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("TIERFS_CRASH_RUNS", 25)))
    args = ap.parse_args()
    env = {}
    for line in open(args.client_env):
        if "=" in line:
            k, v = line.strip().split("=", 1)
            env[k] = v
    work = tempfile.mkdtemp(prefix="crash-runs.")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    store = ["--backend", "rados", "--conf", env["TIERFS_CEPH_CONF"], "--keyring",
             env["TIERFS_CEPH_KEYRING"], "--user", env["TIERFS_CEPH_USER"], "--pool",
             env["TIERFS_CEPH_POOL"], "--namespace", f"crash-runs-{os.getpid()}"]
    cache = ["--cache-device", f"{work}/cache0=256M", "--cache-memory", "0"]
    daemon = Daemon(args.tierfs, store + cache, mnt, work)

    def on_term(signum, frame):
        raise SystemExit(f"crash runs: stopped by signal {signum} (seed {args.seed})")

    signal.signal(signal.SIGTERM, on_term)
    failures = []
    try:
        subprocess.run([args.tierfs, "mkfs", *store, "--chunk-size", "1M"], check=True,
                       stdout=subprocess.DEVNULL)
        model = Model()
        daemon.start()
        os.mkdir(os.path.join(mnt, "static"))
        model.dirs["static"] = [True]
        for i, p in enumerate(STATIC):
            data = random.Random(f"static{i}").randbytes(CHUNK * (i + 1) + 777)
            with open(os.path.join(mnt, p), "wb") as f:
                f.write(data)
            model.files[p] = [data]
        started = time.monotonic()
        for run in range(args.runs):
            t0 = time.monotonic()
            seed = args.seed + run
            try:
                outcome = one_run(args, daemon, model, seed, run, store)
            except Exception as e:  # noqa: BLE001 - a run's failure is reported, then the next runs
                outcome = None
                failures.append(f"run {run} (seed {seed}): {e}")
                print(f"run {run} seed {seed}: FAILED: {e}", flush=True)
                daemon.cleanup()
                daemon.start()  # the next run starts from what is there
                model_adopt(model, mnt)
            if outcome:
                print(f"run {run} seed {seed}: {outcome} [{time.monotonic() - t0:.1f} s]", flush=True)
        daemon.stop()
        total = time.monotonic() - started
        print(f"crash runs: {args.runs - len(failures)} survived of {args.runs} "
              f"(seed {args.seed}, {total:.0f} s)")
        if failures:
            print(f"FAIL: seed {args.seed}; reproduce with TIERFS_CRASH_SEED={args.seed} "
                  f"TIERFS_CRASH_RUNS={args.runs}:\n  " + "\n  ".join(failures), file=sys.stderr)
            return 1
        return 0
    finally:
        daemon.cleanup()
        if os.environ.get("KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def model_adopt(model, mnt):
    """After a failed run: the next one starts from what the mount holds."""
    for fd, _ in model.open_fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    model.open_fds.clear()
    check_tree(model, mnt)


def one_run(args, daemon, model, seed, run, store):
    """One run from a mounted daemon to a mounted daemon; raises with what went wrong."""
    rng = random.Random(seed)
    mnt = daemon.mnt
    # The static files are read (cached, if they were not) and sealed: a region is sealed after
    # 1 s without inserts (RegionCacheTest.APartlyFilledRegionIsSealedSoonAfterItsIdleTime).
    for p in STATIC:
        if read(os.path.join(mnt, p)) != model.files[p][0]:
            raise RuntimeError(f"{p}: wrong bytes before the kill")
    time.sleep(1.5)

    w = Workload(rng, model, mnt, f"r{run}")
    kill_at = rng.randint(3, 30)
    delay = rng.uniform(0, 0.08)
    timer = None
    interrupted = None
    killed_op = None
    for i in range(kill_at + 200):
        name, apply, on_interrupt = w.choose()
        if i == kill_at:
            killed_op = name
            timer = threading.Timer(delay, daemon.proc.kill)
            timer.start()
        try:
            apply()
        except OSError as e:
            if timer is None or e.errno not in (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO):
                raise RuntimeError(f"op {i} {name}: {e}") from e
            on_interrupt()
            interrupted = f"op {i} {name} ({os.strerror(e.errno)})"
            break
    else:
        raise RuntimeError(f"the daemon was not killed by op {kill_at + 200}")
    timer.join()
    daemon.proc.wait()
    dead_after = wait_dead(mnt)
    for fd, _ in model.open_fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    model.open_fds.clear()

    daemon.start()  # over the dead mount point
    before = daemon.stats()
    for p in STATIC:
        if read(os.path.join(mnt, p)) != model.files[p][0]:
            raise RuntimeError(f"{p}: wrong bytes after the restart")
    after = daemon.stats()
    if after["backend_reads"] != before["backend_reads"] or after["device_hits"] <= before["device_hits"]:
        raise RuntimeError(f"the static files did not come from the cache after the restart: "
                           f"backend_reads {before['backend_reads']} -> {after['backend_reads']}, "
                           f"device_hits {before['device_hits']} -> {after['device_hits']}")
    hits = after["device_hits"] - before["device_hits"]
    problems, nfiles = check_tree(model, mnt)
    if problems:
        raise RuntimeError(f"kill at op {kill_at} ({killed_op}) +{delay * 1000:.0f} ms, "
                           f"interrupted {interrupted}; wrong after the restart:\n    "
                           + "\n    ".join(problems[:20]))

    daemon.stop()
    rc, out = fsck(args.tierfs, store, "--deep")
    if rc != 0:
        raise RuntimeError(f"fsck --deep after the crash (exit {rc}):\n{out}")
    rc, out_repair = fsck(args.tierfs, store, "--repair", "--min-age", "0", "--intent-min-age", "0")
    if rc != 0:
        raise RuntimeError(f"fsck --repair (exit {rc}):\n{out_repair}")
    repaired = [ln for ln in out_repair.splitlines() if ln.startswith("repaired")]
    rc, out = fsck(args.tierfs, store, "--min-age", "0", "--intent-min-age", "0")
    if rc != 0 or not out.rstrip().endswith("clean"):
        raise RuntimeError(f"fsck after --repair (exit {rc}):\n{out}")
    daemon.start()
    return (f"kill at op {kill_at} ({killed_op}) +{delay * 1000:.0f} ms, interrupted: "
            f"{interrupted or 'none'}; mount dead {dead_after:.2f} s after the kill; {nfiles} files as allowed, {hits} device hits and 0 "
            f"back-end reads after the restart, fsck clean ({len(repaired)} repaired): survived")


if __name__ == "__main__":
    sys.exit(main())
