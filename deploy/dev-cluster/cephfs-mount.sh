#!/usr/bin/env bash
# Mount the CephFS of a dev cluster started with start.sh --mds DIR, with
# ceph-fuse, in the background; and unmount it again. The ceph-fuse process
# is recorded under DIR/run so that --unmount (and stop.sh DIR) can make sure
# it is gone. See README.md next to this script.
#
# Usage: cephfs-mount.sh DIR MOUNTPOINT [ceph-fuse options...]
#        cephfs-mount.sh --unmount DIR [MOUNTPOINT]
set -euo pipefail

readonly MARKER=".tierfs-dev-cluster"   # written by start.sh
readonly MOUNT_WAIT_SECS=60             # until the mount answers
readonly BUSY_WAIT_SECS=5               # retrying a busy unmount, then lazy
readonly EXIT_WAIT_SECS=30              # for ceph-fuse to flush and exit after unmount
readonly TERM_WAIT_SECS=10              # after SIGTERM, before SIGKILL
readonly KILL_WAIT_SECS=10

unset CEPH_ARGS CEPH_CONF CEPH_KEYRING

usage() {
    cat <<'EOF'
Usage: cephfs-mount.sh DIR MOUNTPOINT [ceph-fuse options...]
       cephfs-mount.sh --unmount DIR [MOUNTPOINT]

Mount the CephFS of the dev cluster in DIR (started with start.sh --mds) at
MOUNTPOINT (created if missing) with ceph-fuse as the user named in
DIR/client.env, in the background. Returns once the mount answers (at most
60 s). Further arguments go to ceph-fuse after the defaults, e.g.
--client_oc_size=0 or -o some_fuse_option. The ceph-fuse pid is recorded in
DIR/run/ceph-fuse.N.pid (admin socket DIR/run/ceph-fuse.N.asok, log
DIR/log/ceph-fuse.N.log).

--unmount DIR MOUNTPOINT unmounts that mount of DIR and makes sure its
ceph-fuse exits (a busy mount is retried for 5 s, then detached lazily; a
ceph-fuse that does not exit within 30 s gets SIGTERM, then SIGKILL).
Without MOUNTPOINT every ceph-fuse mount recorded in DIR is unmounted (stop.sh
does this). Exit 0 if nothing was mounted.
EOF
}

usage_error() { echo "cephfs-mount.sh: $*" >&2; echo >&2; usage >&2; exit 2; }
err() { echo "cephfs-mount.sh: $*" >&2; }

UNMOUNT=0
case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --unmount|-u) UNMOUNT=1; shift ;;
esac
[[ $# -ge 1 && -n "$1" ]] || usage_error "missing DIR"
DIR="$1"; shift
MNT=""
if (( UNMOUNT )); then
    [[ $# -le 1 ]] || usage_error "--unmount takes DIR and at most one MOUNTPOINT"
    MNT="${1:-}"
else
    [[ $# -ge 1 && -n "$1" ]] || usage_error "missing MOUNTPOINT"
    MNT="$1"; shift
fi
EXTRA=("$@")

if [[ ! -d "$DIR" ]]; then
    (( UNMOUNT )) && { echo "cephfs-mount.sh: $DIR does not exist; nothing to unmount"; exit 0; }
    err "$DIR does not exist"; exit 1
fi
DIR="$(cd -- "$DIR" && pwd -P)"
readonly CONF="$DIR/ceph.conf"
[[ -e "$DIR/$MARKER" ]] || { err "$DIR was not created by start.sh (no $MARKER)"; exit 1; }
if [[ -n "$MNT" ]]; then
    MNT="$(realpath -m -- "$MNT")"
    # It is matched against /proc/self/mountinfo, which escapes whitespace.
    [[ "$MNT" =~ ^[A-Za-z0-9_./+@%:=-]+$ ]] \
        || usage_error "MOUNTPOINT path must not contain spaces or special characters: '$MNT'"
fi

# ------------------------------------------------------------------ helpers

# mounted_at, argv0, proc_state, to_bytes
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Prints the pid in pid file $1 if it is a live ceph-fuse started with this
# DIR's conf for mount point $2; fails otherwise. A zombie has an empty
# cmdline: dead. As stop.sh: a stale pid file with a reused pid kills nothing.
live_fuse_pid() {
    local pid argv=() prev="" a conf_ok=0 mnt_ok=0
    pid="$(cat -- "$1" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    mapfile -d "" -t argv 2>/dev/null < "/proc/$pid/cmdline" || return 1
    [[ ${#argv[@]} -gt 0 && "${argv[0]##*/}" == ceph-fuse ]] || return 1
    for a in "${argv[@]}"; do
        [[ "$prev" == "-c" && "$a" == "$CONF" ]] && conf_ok=1
        [[ "$a" == "$2" ]] && mnt_ok=1
        prev="$a"
    done
    (( conf_ok && mnt_ok )) || return 1
    echo "$pid"
}

# Wait up to $2 seconds for pid file $1 (mount point $3) to name no live ceph-fuse.
wait_exit() {
    local i
    for (( i = 0; i < $2 * 10; i++ )); do
        live_fuse_pid "$1" "$3" >/dev/null || return 0
        sleep 0.1
    done
    ! live_fuse_pid "$1" "$3" >/dev/null
}

fuse_umount() {
    if command -v fusermount3 >/dev/null; then
        fusermount3 -u ${2:+"$2"} -- "$1"
    elif [[ "${2:-}" == -z ]]; then
        umount -l -- "$1"
    else
        umount -- "$1"
    fi
}

# Unmount the mount recorded as DIR/run/ceph-fuse.$1.{pid,mnt} and make sure
# its ceph-fuse is gone; then forget it.
unmount_one() {
    local n="$1" pidf="$DIR/run/ceph-fuse.$1.pid" mntf="$DIR/run/ceph-fuse.$1.mnt"
    local mnt pid i lazy=0
    mnt="$(cat -- "$mntf" 2>/dev/null)" || mnt=""
    if [[ -z "$mnt" ]]; then
        # Only a pid file: a mount that was being set up, or a broken record.
        err "ceph-fuse.$n: no mount point recorded in $mntf; removing the record"
        rm -f -- "$pidf" "$mntf"
        return 0
    fi
    pid="$(live_fuse_pid "$pidf" "$mnt")" || pid=""
    if mounted_at "$mnt" fuse.ceph-fuse; then
        echo "unmounting $mnt${pid:+ (ceph-fuse pid $pid)}"
        for (( i = 0; i < BUSY_WAIT_SECS * 10; i++ )); do
            fuse_umount "$mnt" 2>/dev/null && break
            sleep 0.1
        done
        if mounted_at "$mnt" fuse.ceph-fuse; then
            err "$mnt is busy (in use: fuser -vm $mnt); detaching it lazily"
            fuse_umount "$mnt" -z || true
            lazy=1
        fi
    elif [[ -z "$pid" ]]; then
        rm -f -- "$pidf" "$mntf"
        return 0   # neither mounted nor running: nothing to do
    fi
    # After a lazy unmount ceph-fuse serves the open files until they are
    # closed: do not wait for that. SIGTERM makes it flush and exit.
    if [[ -n "$pid" ]] && { (( lazy )) || ! wait_exit "$pidf" "$EXIT_WAIT_SECS" "$mnt"; }; then
        (( lazy )) || err "ceph-fuse pid $pid did not exit within ${EXIT_WAIT_SECS}s of the unmount; sending SIGTERM"
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_exit "$pidf" "$TERM_WAIT_SECS" "$mnt"; then
            err "ceph-fuse pid $pid still alive; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            if ! wait_exit "$pidf" "$KILL_WAIT_SECS" "$mnt"; then
                err "could not stop ceph-fuse pid $pid"
                return 1
            fi
        fi
    fi
    # A ceph-fuse that died (or was killed) leaves a dead mount behind
    # ("Transport endpoint is not connected").
    if mounted_at "$mnt" fuse.ceph-fuse; then
        fuse_umount "$mnt" -z || { err "could not unmount $mnt"; return 1; }
    fi
    rm -f -- "$pidf" "$mntf" "$DIR/run/ceph-fuse.$n.asok"
}

# Record numbers N of DIR/run/ceph-fuse.N.{pid,mnt}, optionally only those of
# mount point $1.
records() {
    local f n
    shopt -s nullglob
    for f in "$DIR"/run/ceph-fuse.*.pid "$DIR"/run/ceph-fuse.*.mnt; do
        n="${f##*/ceph-fuse.}"; n="${n%.*}"
        [[ "$n" =~ ^[0-9]+$ ]] || continue
        if [[ -n "${1:-}" ]]; then
            [[ "$(cat -- "$DIR/run/ceph-fuse.$n.mnt" 2>/dev/null)" == "$1" ]] || continue
        fi
        echo "$n"
    done | sort -un
}

# ------------------------------------------------------------------ unmount

if (( UNMOUNT )); then
    mapfile -t NS < <(records "$MNT")
    if [[ ${#NS[@]} -eq 0 ]]; then
        if [[ -n "$MNT" ]] && mounted_at "$MNT"; then
            err "$MNT is mounted, but not by cephfs-mount.sh for $DIR; not touching it"
            exit 1
        fi
        echo "cephfs-mount.sh: no ceph-fuse mount recorded in $DIR${MNT:+ for $MNT}; nothing to unmount"
        exit 0
    fi
    rc=0
    for n in "${NS[@]}"; do unmount_one "$n" || rc=1; done
    exit "$rc"
fi

# -------------------------------------------------------------------- mount

env_value() { sed -n "s/^$1=//p" "$DIR/client.env" 2>/dev/null | tail -n 1; }
FS_NAME="$(env_value TIERFS_CEPHFS_NAME)"
FS_USER="$(env_value TIERFS_CEPHFS_USER)"
FS_KEYRING="$(env_value TIERFS_CEPHFS_KEYRING)"
if [[ -z "$FS_NAME" || -z "$FS_USER" || -z "$FS_KEYRING" ]]; then
    err "$DIR/client.env has no TIERFS_CEPHFS_* settings: start the cluster with start.sh --mds"
    exit 1
fi
[[ -x /usr/bin/ceph-fuse ]] || { err "/usr/bin/ceph-fuse is missing (Debian package ceph-fuse)"; exit 1; }

mkdir -p -- "$MNT" || { err "cannot create mount point $MNT"; exit 1; }
if mounted_at "$MNT"; then
    err "something is already mounted at $MNT"
    exit 1
fi

# Claim the first free record number; noclobber makes that atomic against a
# concurrent cephfs-mount.sh on the same DIR.
N=0
while ! ( set -C; : > "$DIR/run/ceph-fuse.$N.pid" ) 2>/dev/null; do
    (( ++N < 1000 )) || { err "no free record number in $DIR/run"; exit 1; }
done
readonly PIDF="$DIR/run/ceph-fuse.$N.pid" MNTF="$DIR/run/ceph-fuse.$N.mnt"
echo "$MNT" > "$MNTF"

SUCCEEDED=0
CHILD=""
on_exit() {
    local rc=$?
    (( ! SUCCEEDED )) || return 0
    # The startup log holds this run's output only; the log accumulates.
    tail_logs "$DIR/log/ceph-fuse.$N.startup.log" "$DIR/log/ceph-fuse.$N.log"
    echo "cephfs-mount.sh: failed (exit $rc); cleaning up" >&2
    # Our own child, maybe not even ceph-fuse yet: signal it by pid.
    [[ -z "$CHILD" ]] || stop_child "$CHILD" "$TERM_WAIT_SECS" "$KILL_WAIT_SECS"
    unmount_one "$N" >&2 || true
}
trap on_exit EXIT
trap 'exit 130' INT TERM

T0=$(date +%s%N)
# Foreground ceph-fuse (-f) started in the background in its own session, so
# that its pid is $! and no terminal signal reaches it; stdin from /dev/null,
# output to a startup log, inherited fds > 2 closed (as start.sh does).
(
    for fd in /proc/"$BASHPID"/fd/*; do
        fd="${fd##*/}"
        if (( fd > 2 )); then exec {fd}>&- 2>/dev/null || true; fi
    done
    exec setsid /usr/bin/ceph-fuse -f -c "$CONF" -n "$FS_USER" -k "$FS_KEYRING" \
        --client_fs "$FS_NAME" \
        --log-file "$DIR/log/ceph-fuse.$N.log" \
        --admin-socket "$DIR/run/ceph-fuse.$N.asok" \
        "${EXTRA[@]}" "$MNT" </dev/null >"$DIR/log/ceph-fuse.$N.startup.log" 2>&1
) &
CHILD=$!
echo "$CHILD" > "$PIDF"

# The mount shows up in mountinfo once ceph-fuse has a session with the MDS;
# a stat of the root then proves that requests are answered.
while :; do
    if (( $(date +%s%N) - T0 > MOUNT_WAIT_SECS * 1000000000 )); then
        err "timed out after ${MOUNT_WAIT_SECS}s waiting for the mount at $MNT"
        exit 1
    fi
    case "$(proc_state "$CHILD")" in
        gone|Z|X) err "ceph-fuse exited before the mount was up"; exit 1 ;;
    esac
    # Until the subshell has exec'd setsid and setsid ceph-fuse, the pid
    # reads bash or setsid (or nothing, during an execve).
    if [[ "$(argv0 "$CHILD")" != ceph-fuse ]]; then
        sleep 0.05
        continue
    fi
    if mounted_at "$MNT" fuse.ceph-fuse && timeout 10 stat -- "$MNT" >/dev/null 2>&1; then
        break
    fi
    sleep 0.1
done
live_fuse_pid "$PIDF" "$MNT" >/dev/null || { err "ceph-fuse exited after mounting $MNT"; exit 1; }
SUCCEEDED=1

printf 'mounted CephFS %s at %s in %ss (ceph-fuse pid %s, user %s)\n' "$FS_NAME" "$MNT" \
    "$(echo "$(( $(date +%s%N) - T0 ))" | awk '{ printf "%.1f", $1 / 1e9 }')" "$CHILD" "$FS_USER"
echo "  admin socket: $DIR/run/ceph-fuse.$N.asok   log: $DIR/log/ceph-fuse.$N.log"
echo "  unmount: $0 --unmount $DIR $MNT"
