#!/usr/bin/env bash
# Stop a cluster started by start.sh DIR. Idempotent: exits 0 when nothing is
# running or DIR does not exist. Only signals processes whose pid file is in
# DIR/run AND whose /proc/PID/cmdline shows a ceph daemon (or radosgw) started
# with DIR/ceph.conf, so a stale pid file pointing at a reused pid kills nothing.
#
# Usage: stop.sh [--purge] DIR
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
readonly MARKER=".tierfs-dev-cluster"   # written by start.sh
readonly TERM_WAIT_SECS=20               # per group, before SIGKILL
readonly KILL_WAIT_SECS=10

unset CEPH_ARGS CEPH_CONF CEPH_KEYRING

usage() {
    cat <<'EOF'
Usage: stop.sh [--purge] DIR

Unmount the CephFS mounts made by cephfs-mount.sh DIR and the S3 mounts made
by s3-mount.sh DIR, then stop the Ceph daemons of the cluster in DIR (radosgw
and MDS first, then OSDs and mgr, then the mon): SIGTERM, wait, then SIGKILL.
Exit 0 if nothing is running.
  --purge     afterwards delete DIR (only if start.sh created it)
EOF
}

usage_error() { echo "stop.sh: $*" >&2; echo >&2; usage >&2; exit 2; }

PURGE=0
DIR=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --purge)   PURGE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --)        shift; break ;;
        -*)        usage_error "unknown option '$1'" ;;
        *)         [[ -z "$DIR" ]] || usage_error "more than one DIR given ('$DIR', '$1')"
                   DIR="$1"; shift ;;
    esac
done
if [[ $# -gt 0 ]]; then
    [[ -z "$DIR" && $# -eq 1 ]] || usage_error "more than one DIR given"
    DIR="$1"
fi
[[ -n "$DIR" ]] || usage_error "missing DIR"

if [[ ! -d "$DIR" ]]; then
    echo "stop.sh: $DIR does not exist; nothing to stop"
    exit 0
fi
DIR="$(cd -- "$DIR" && pwd -P)"
readonly CONF="$DIR/ceph.conf"

# Prints the pid in pid file $1 if it is a live ceph daemon started with this
# DIR's conf; fails otherwise. A zombie has an empty cmdline: dead.
live_pid() {
    local pid argv=() prev="" a
    pid="$(cat -- "$1" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    mapfile -d "" -t argv 2>/dev/null < "/proc/$pid/cmdline" || return 1
    [[ ${#argv[@]} -gt 0 ]] || return 1
    case "${argv[0]##*/}" in ceph-mon|ceph-osd|ceph-mgr|ceph-mds|radosgw) ;; *) return 1 ;; esac
    for a in "${argv[@]}"; do
        if [[ "$prev" == "-c" && "$a" == "$CONF" ]]; then
            echo "$pid"
            return 0
        fi
        prev="$a"
    done
    return 1
}

# The pid files among "$@" whose daemons are still alive.
alive_among() {
    local f
    for f in "$@"; do
        [[ -e "$f" ]] || continue
        live_pid "$f" >/dev/null && echo "$f"
    done
    return 0
}

# Send signal $1 to the live daemons of pid files "${@:2}".
signal_all() {
    local sig="$1" f pid; shift
    for f in "$@"; do
        pid="$(live_pid "$f")" || continue
        kill "-$sig" "$pid" 2>/dev/null || true
    done
}

# Stop one group of daemons: SIGTERM, bounded wait, SIGKILL, bounded wait.
stop_group() {
    local label="$1"; shift
    local files=() left=() i
    mapfile -t files < <(alive_among "$@")
    [[ ${#files[@]} -gt 0 ]] || return 0
    echo "stopping $label: $(for f in "${files[@]}"; do basename "$f" .pid; done | tr '\n' ' ')"
    signal_all TERM "${files[@]}"
    for (( i = 0; i < TERM_WAIT_SECS * 10; i++ )); do
        mapfile -t left < <(alive_among "${files[@]}")
        [[ ${#left[@]} -gt 0 ]] || break
        sleep 0.1
    done
    mapfile -t left < <(alive_among "${files[@]}")
    if [[ ${#left[@]} -gt 0 ]]; then
        echo "  still alive after ${TERM_WAIT_SECS}s, sending SIGKILL: $(for f in "${left[@]}"; do basename "$f" .pid; done | tr '\n' ' ')"
        signal_all KILL "${left[@]}"
        for (( i = 0; i < KILL_WAIT_SECS * 10; i++ )); do
            mapfile -t left < <(alive_among "${left[@]}")
            [[ ${#left[@]} -gt 0 ]] || break
            sleep 0.1
        done
        if [[ ${#left[@]} -gt 0 ]]; then
            echo "stop.sh: could not stop: ${left[*]}" >&2
            return 1
        fi
    fi
    # The daemons do not always remove their pid files (fast shutdown, SIGKILL).
    rm -f -- "${files[@]}"
}

shopt -s nullglob
rc=0
# ceph-fuse mounts first, while the MDS and OSDs can still take their data.
if [[ -n "$(echo "$DIR"/run/ceph-fuse.*)" ]]; then
    "$SCRIPT_DIR/cephfs-mount.sh" --unmount "$DIR" || rc=1
fi
# S3 mounts while radosgw still runs (rclone uploads what it has not yet).
if [[ -n "$(echo "$DIR"/run/s3fs.* "$DIR"/run/rclone.*)" ]]; then
    "$SCRIPT_DIR/s3-mount.sh" --unmount "$DIR" || rc=1
fi
# radosgw and the MDS are clients of the OSDs. The MDS flushes its journal to
# the OSDs on the way down; OSDs and mgr next: an OSD whose mon is gone hangs
# in shutdown waiting for it.
stop_group "radosgw" "$DIR"/run/rgw.*.pid || rc=1
stop_group "MDS" "$DIR"/run/mds.*.pid || rc=1
stop_group "OSDs/mgr" "$DIR"/run/osd.*.pid "$DIR"/run/mgr.*.pid || rc=1
stop_group "mon" "$DIR"/run/mon.*.pid || rc=1
(( rc == 0 )) || exit 1

if (( PURGE )); then
    if [[ ! -e "$DIR/$MARKER" ]]; then
        echo "stop.sh: --purge: $DIR was not created by start.sh (no $MARKER); not deleting it" >&2
        exit 1
    fi
    # Not into a file system mounted below DIR (a CephFS mount that failed
    # to unmount would be emptied).
    rm -rf --one-file-system -- "$DIR"
    echo "deleted $DIR"
fi
exit 0
