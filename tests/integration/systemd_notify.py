#!/usr/bin/env python3
"""Readiness, clean stop and restart of a tierfs mount as systemd sees them, without systemd.

The test is the service manager: it binds the datagram socket that NOTIFY_SOCKET names and
checks what the daemon says there against the state of the mount at that moment.

1. `tierfs mount -f`: READY=1 arrives only when the mount is listed and answers (a file
   written by an earlier mount is there); nothing says READY=1 earlier. SIGTERM: STOPPING=1
   arrives, the daemon exits 0, the mount point is unmounted.
2. Forked mode (no -f): READY=1 carries MAINPID of the daemon, which sent it; the data written
   without fsync (still open) before that SIGTERM was committed.
3. kill -9 leaves a dead mount; `tierfs mount` on it replaces it, says so in its log, and
   serves the data again. A live mount there (tierfs or tmpfs) is an error naming it.

Usage: systemd_notify.py TIERFS   (root and /dev/fuse needed)
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

TIMEOUT = 30  # seconds for any one step; a healthy daemon needs well under one


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def mounts_at(path):
    """The mountinfo lines for `path`, as (fstype, major:minor), in mount order."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[4] == path:
                found.append((fields[dash + 1], fields[2]))
    return found


def fs_type_hex(path):
    """statfs f_type of `path` (in hex), asked in a child so that a hung mount fails the test."""
    r = subprocess.run(["timeout", "10", "stat", "-f", "-c", "%t", path],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"error: {r.stderr.strip()}"


FUSE_SUPER_MAGIC = "65735546"


class NotifyListener:
    """The service manager's end of NOTIFY_SOCKET: each message with the sender's pid."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    def receive(self, timeout=TIMEOUT):
        """(fields, sender pid) of the next message, or None after `timeout` seconds."""
        self.sock.settimeout(timeout)
        try:
            data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            return None
        pid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", payload[:12])[0]
        fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        return fields, pid

    def wait_for(self, key, on_each=None):
        """Receives until a message sets `key`; `on_each(fields)` sees every message first."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            got = self.receive(deadline - time.monotonic())
            if got is None:
                break
            if on_each:
                on_each(got[0])
            if key in got[0]:
                return got
        fail(f"no {key} from the daemon within {TIMEOUT} s")

    def close(self):
        self.sock.close()


class Test:
    def __init__(self, tierfs):
        self.tierfs = tierfs
        self.work = tempfile.mkdtemp()
        self.mnt = os.path.join(self.work, "mnt")
        self.other = os.path.join(self.work, "other")  # for a tmpfs mount
        os.mkdir(self.mnt)
        os.mkdir(self.other)
        self.store = ["--backend", "dir", "--path", os.path.join(self.work, "store")]
        self.notify = NotifyListener(os.path.join(self.work, "notify.sock"))
        # Daemons this test started, to stop whatever is left at the end: foreground ones as
        # Popen objects (reaped ones are never signalled), forked ones by pid until seen gone.
        self.procs = []
        self.forked = []
        self.logs = []

    def env(self):
        return dict(os.environ, NOTIFY_SOCKET=self.notify.path)

    def start_foreground(self, name):
        log = open(os.path.join(self.work, f"{name}.log"), "w")
        self.logs.append(log.name)
        proc = subprocess.Popen([self.tierfs, "mount", "-f", *self.store, self.mnt],
                                stdout=log, stderr=subprocess.STDOUT, env=self.env())
        self.procs.append(proc)
        return proc

    def check_ready_means_answering(self, expect_file=None):
        """Reads up to READY=1, checking at each message that READY=1 comes only with the mount
        up; returns (fields, sender pid) of the READY=1 message."""

        def not_ready_before_mount(fields):
            if "READY" in fields and not mounts_at(self.mnt):
                fail(f"READY=1 while {self.mnt} is not mounted")

        fields, pid = self.notify.wait_for("READY", not_ready_before_mount)
        listed = mounts_at(self.mnt)
        if not listed or listed[-1][0] != "fuse.tierfs":
            fail(f"at READY=1 the mount at {self.mnt} is {listed}, not fuse.tierfs")
        if fs_type_hex(self.mnt) != FUSE_SUPER_MAGIC:
            fail(f"at READY=1 statfs of {self.mnt} says {fs_type_hex(self.mnt)}")
        if expect_file and not os.path.exists(os.path.join(self.mnt, expect_file)):
            fail(f"at READY=1 {expect_file} is not in the mount: {os.listdir(self.mnt)}")
        if "STATUS" not in fields or "serving volume" not in fields["STATUS"]:
            fail(f"READY=1 without a serving STATUS: {fields}")
        return fields, pid

    def stop_and_check(self, pid, wait_exit):
        """SIGTERM: STOPPING=1 arrives, the daemon exits 0 (wait_exit() gives its status) and
        the mount point is unmounted."""
        os.kill(pid, signal.SIGTERM)
        fields, _ = self.notify.wait_for("STOPPING")
        if "SIGTERM" not in fields.get("STATUS", ""):
            fail(f"STOPPING=1 does not say why: {fields}")
        rc = wait_exit()
        if rc != 0:
            fail(f"the daemon exited with {rc} after SIGTERM")
        if mounts_at(self.mnt):
            fail(f"{self.mnt} is still mounted after the daemon exited: {mounts_at(self.mnt)}")

    def foreground_ready_and_clean_stop(self):
        # A file written by an earlier mount: at READY=1 it must be visible through the mount.
        proc = self.start_foreground("seed")
        self.check_ready_means_answering()
        with open(os.path.join(self.mnt, "seed.txt"), "w") as f:
            f.write("from before")
        self.stop_and_check(proc.pid, lambda: proc.wait(TIMEOUT))

        proc = self.start_foreground("foreground")
        _, sender = self.check_ready_means_answering(expect_file="seed.txt")
        if sender != proc.pid:
            fail(f"READY=1 came from pid {sender}, not the daemon {proc.pid}")
        # Written but neither fsynced nor closed when SIGTERM comes: the daemon must commit it.
        self.unflushed = os.urandom(3 << 20)
        held = open(os.path.join(self.mnt, "unflushed.bin"), "wb")
        held.write(self.unflushed)
        held.flush()  # to the kernel, hence to the daemon (no writeback cache): no fsync
        self.stop_and_check(proc.pid, lambda: proc.wait(TIMEOUT))
        try:
            held.close()
        except OSError:
            pass  # the mount is gone: the close has nowhere to go
        print("foreground: READY=1 once answering, STOPPING=1 and a clean stop on SIGTERM")

    def forked_ready_with_mainpid(self):
        log = os.path.join(self.work, "forked.log")
        self.logs.append(log)
        # Output to a file, not a pipe: the daemon keeps its standard error (a pipe would not
        # reach end-of-file while it runs).
        with open(log + ".parent", "w") as out:
            parent = subprocess.run([self.tierfs, "mount", *self.store, "--log", log, self.mnt],
                                    env=self.env(), timeout=TIMEOUT, stdout=out, stderr=out)
        if parent.returncode != 0:
            fail(f"tierfs mount (forked) exited with {parent.returncode}: see {log}.parent")
        fields, sender = self.check_ready_means_answering(expect_file="unflushed.bin")
        mainpid = int(fields.get("MAINPID", "0"))
        if mainpid <= 0 or mainpid != sender:
            fail(f"READY=1 from pid {sender} names MAINPID={fields.get('MAINPID')}")
        self.forked.append(mainpid)
        with open(f"/proc/{mainpid}/cmdline", "rb") as f:
            if b"mount" not in f.read():
                fail(f"MAINPID {mainpid} is not a tierfs mount daemon")
        with open(os.path.join(self.mnt, "unflushed.bin"), "rb") as f:
            if f.read() != self.unflushed:
                fail("data written without fsync before SIGTERM was not committed")
        self.stop_and_check(mainpid, lambda: wait_gone(mainpid))
        self.forked.remove(mainpid)
        with open(log) as f:
            if "unmounted" not in f.read():
                fail(f"the forked daemon's log does not say it unmounted: {log}")
        print("forked: READY=1 with MAINPID of the daemon; unflushed data committed at SIGTERM")

    def restart_after_kill(self):
        proc = self.start_foreground("killed")
        self.check_ready_means_answering()
        with open(os.path.join(self.mnt, "before-crash.txt"), "w") as f:
            f.write("closed before the crash")
        proc.kill()
        proc.wait(TIMEOUT)
        try:
            os.stat(self.mnt)
            fail(f"{self.mnt} still answers after kill -9")
        except OSError as e:
            if e.errno != 107:  # ENOTCONN: "Transport endpoint is not connected"
                fail(f"stat of the dead mount: {e}")

        proc = self.start_foreground("restarted")
        self.check_ready_means_answering(expect_file="before-crash.txt")
        if len(mounts_at(self.mnt)) != 1:
            fail(f"the dead mount was not replaced: {mounts_at(self.mnt)}")
        with open(self.logs[-1]) as f:
            if "dead fuse.tierfs mount" not in f.read():
                fail("the restarted daemon's log does not say it removed the dead mount")
        with open(os.path.join(self.mnt, "unflushed.bin"), "rb") as f:
            if f.read() != self.unflushed:
                fail("the restarted mount serves other data")
        self.refuses_live_mounts()
        self.stop_and_check(proc.pid, lambda: proc.wait(TIMEOUT))
        print("restart: the dead mount replaced and the data served again; live mounts refused")

    def refuses_live_mounts(self):
        """`tierfs mount` on a live mount fails naming it and leaves it mounted."""
        subprocess.run(["mount", "-t", "tmpfs", "tierfs-test", self.other], check=True)
        try:
            for path, kind in ((self.mnt, "fuse.tierfs"), (self.other, "tmpfs")):
                store = ["--backend", "dir", "--path", os.path.join(self.work, "store2")]
                r = subprocess.run([self.tierfs, "mount", "-f", *store, path], timeout=TIMEOUT,
                                   capture_output=True, text=True)
                if r.returncode == 0 or path not in r.stderr or kind not in r.stderr:
                    fail(f"tierfs mount on the live {kind} mount: {r.returncode} {r.stderr}")
                if not mounts_at(path) or mounts_at(path)[-1][0] != kind:
                    fail(f"the live {kind} mount at {path} was touched: {mounts_at(path)}")
        finally:
            subprocess.run(["umount", self.other])

    def cleanup(self):
        for path in (self.mnt, self.other):
            while mounts_at(path):
                subprocess.run(["umount", "-l", path])
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for pid in self.forked:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.notify.close()
        if not os.environ.get("KEEP"):
            subprocess.run(["rm", "-rf", self.work])

    def print_logs(self):
        for log in self.logs:
            if os.path.exists(log):
                print(f"--- {log}", file=sys.stderr)
                with open(log) as f:
                    sys.stderr.write(f.read())


def wait_gone(pid):
    """Waits for a process that is not our child; its exit status is not ours to see, so a gone
    process counts as 0 (the log says more)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return 0  # exited; reaped by whoever adopted it
        except FileNotFoundError:
            return 0
        time.sleep(0.05)
    return f"still running after {TIMEOUT} s"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    test = Test(sys.argv[1])
    ok = False
    try:
        subprocess.run([test.tierfs, "mkfs", *test.store, "--chunk-size", "1M"], check=True,
                       stdout=subprocess.DEVNULL)
        test.foreground_ready_and_clean_stop()
        test.forked_ready_with_mainpid()
        test.restart_after_kill()
        ok = True
    finally:
        if not ok:
            test.print_logs()
        test.cleanup()
    print("systemd_notify.py: passed")


if __name__ == "__main__":
    main()
