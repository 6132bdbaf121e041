#!/usr/bin/env bash
# Mount the S3 bucket of a dev cluster started with start.sh --rgw DIR, with
# s3fs or rclone, in the background, each with a local disk cache; and unmount
# it again. The process is recorded under DIR/run so that --unmount (and
# stop.sh DIR) can make sure it is gone. See README.md next to this script.
#
# Usage: s3-mount.sh --s3fs|--rclone DIR MOUNTPOINT --cache-dir CDIR --cache-size SIZE [options...]
#        s3-mount.sh --unmount DIR [MOUNTPOINT]
set -euo pipefail

readonly MARKER=".tierfs-dev-cluster"   # written by start.sh
readonly MOUNT_WAIT_SECS=60             # until the mount answers
readonly UPLOAD_WAIT_SECS=600           # rclone: for queued uploads before an unmount
readonly BUSY_WAIT_SECS=5               # retrying a busy unmount, then lazy
readonly EXIT_WAIT_SECS=30              # for the process to exit after the unmount
readonly TERM_WAIT_SECS=10              # after SIGTERM, before SIGKILL
readonly KILL_WAIT_SECS=10
readonly RCLONE_REMOTE="rgw"            # the remote in DIR/rclone.conf
readonly RCLONE_MAX_AGE="8760h"         # --vfs-cache-max-age: a year, i.e. SIZE alone bounds it
readonly TOOLS=(s3fs rclone)

# The endpoint is on 127.0.0.1: a proxy from the caller's environment can only
# be wrong. AWS_CA_BUNDLE: see --rclone in the usage.
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY

usage() {
    cat <<'EOF'
Usage: s3-mount.sh --s3fs|--rclone DIR MOUNTPOINT --cache-dir CDIR --cache-size SIZE [options...]
       s3-mount.sh --unmount DIR [MOUNTPOINT]

Mount the S3 bucket of the dev cluster in DIR (started with start.sh --rgw;
endpoint, keys and bucket from DIR/client.env) at MOUNTPOINT (created if
missing; must be empty) with s3fs or rclone, in the background, with its disk
cache in CDIR (created if missing) bounded to about SIZE (bytes, or K/M/G/T,
1024-based). Returns once the mount answers (at most 60 s). Further arguments
go to s3fs / rclone mount after the defaults below, e.g.
-o max_stat_cache_size=1000000 (s3fs) or --dir-cache-time 5s (rclone). The
process runs in the foreground mode in its own session; its pid and mount
point are recorded in DIR/run/TOOL.N.pid and .mnt (TOOL: s3fs or rclone), its
log is DIR/log/TOOL.N.log (stdout/stderr: DIR/log/TOOL.N.startup.log). One
CDIR per mount. No -o allow_other: the mount is for root, who runs this.

--s3fs    s3fs BUCKET MOUNTPOINT -f -o url=ENDPOINT -o use_path_request_style
            -o passwd_file=DIR/s3fs.passwd (mode 600) -o use_cache=CDIR
            -o ensure_diskfree=MB -o enable_noobj_cache
          Cache size: s3fs has no size limit for its cache. Its documented
          knob is ensure_diskfree: it keeps that many MB free on the file
          system of the cache, deleting the cached copies of closed files
          (and then bypassing the cache) when a download or write would use
          more. So MB = free space of CDIR's file system + what CDIR already
          holds - SIZE, taken at mount time: the cache may then grow to
          SIZE, as long as nothing else fills that file system meanwhile
          (for a hard bound give CDIR a file system of its own). If SIZE is
          more than that file system can give, the disk is the bound. SIZE
          must be at least multipart_size x parallel_count (50 MB): s3fs
          wants that much room beyond ensure_diskfree to start.
          Other caching as by default: stat cache on (max_stat_cache_size
          100,000 entries, stat_cache_expire 900 s), plus enable_noobj_cache
          (also caches "no such object"); uploads in multipart_size 10 MB
          parts, parallel_count 5 at a time, above multipart_threshold 25 MB
          (defaults; ample for loopback). Data is uploaded when a written
          file is closed (or flushed).
--rclone  rclone mount rgw:BUCKET MOUNTPOINT --config=DIR/rclone.conf (mode
            600; remote "rgw": type s3, provider Ceph, ENDPOINT, keys)
            --vfs-cache-mode full --cache-dir CDIR --vfs-cache-max-size SIZE
            --vfs-cache-max-age 8760h --rc --rc-addr 127.0.0.1:PORT
          rclone evicts the least recently used closed files once the cache
          is over SIZE, checking every --vfs-cache-poll-interval (1 min), so
          it can overshoot in between. The age limit (default 1 h) is lifted
          so that SIZE alone bounds the cache, as for s3fs. Written files are
          uploaded 5 s after they are closed (--vfs-write-back). Its remote
          control answers on the free port PORT of 127.0.0.1, recorded in
          DIR/run/rclone.N.rc (methods that need auth stay disabled):
          rclone rc --url http://$(cat DIR/run/rclone.0.rc)/ vfs/stats
          AWS_CA_BUNDLE is unset for rclone (1.60 fails with
          LoadCustomCABundleError when it is set).

--unmount DIR MOUNTPOINT unmounts that mount of DIR and makes sure its
process exits. rclone is first given up to 10 min to upload what it still
holds (it exits on unmount without uploading its queue). A busy mount is
retried for 5 s, then detached lazily; a process that does not exit within
30 s of the unmount gets SIGTERM, then SIGKILL. Without MOUNTPOINT every S3
mount recorded in DIR is unmounted (stop.sh does this). Exit 0 if nothing was
mounted.
EOF
}

usage_error() { echo "s3-mount.sh: $*" >&2; echo >&2; usage >&2; exit 2; }
err() { echo "s3-mount.sh: $*" >&2; }

UNMOUNT=0
TOOL=""
case "${1:-}" in
    -h|--help)    usage; exit 0 ;;
    --unmount|-u) UNMOUNT=1; shift ;;
    --s3fs)       TOOL=s3fs; shift ;;
    --rclone)     TOOL=rclone; shift ;;
    "")           usage_error "missing --s3fs, --rclone or --unmount" ;;
    *)            usage_error "the first argument must be --s3fs, --rclone or --unmount, got '$1'" ;;
esac
[[ $# -ge 1 && -n "$1" ]] || usage_error "missing DIR"
DIR="$1"; shift
MNT=""
CDIR=""
SIZE=""
if (( UNMOUNT )); then
    [[ $# -le 1 ]] || usage_error "--unmount takes DIR and at most one MOUNTPOINT"
    MNT="${1:-}"
else
    [[ $# -ge 1 && -n "$1" && "$1" != -* ]] || usage_error "missing MOUNTPOINT"
    MNT="$1"; shift
    # Our options first; the rest (after an optional --) goes to the tool.
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --cache-dir)    [[ $# -ge 2 && -n "$2" ]] || usage_error "option $1 needs a value"
                            CDIR="$2"; shift 2 ;;
            --cache-dir=*)  CDIR="${1#*=}"; shift ;;
            --cache-size)   [[ $# -ge 2 && -n "$2" ]] || usage_error "option $1 needs a value"
                            SIZE="$2"; shift 2 ;;
            --cache-size=*) SIZE="${1#*=}"; shift ;;
            --)             shift; break ;;
            *)              break ;;
        esac
    done
    [[ -n "$CDIR" ]] || usage_error "missing --cache-dir CDIR"
    [[ -n "$SIZE" ]] || usage_error "missing --cache-size SIZE"
    [[ "$SIZE" =~ ^[1-9][0-9]*[KMGT]?$ ]] || usage_error "--cache-size must look like 10G / 512M / bytes, got '$SIZE'"
fi
EXTRA=("$@")

if [[ ! -d "$DIR" ]]; then
    (( UNMOUNT )) && { echo "s3-mount.sh: $DIR does not exist; nothing to unmount"; exit 0; }
    err "$DIR does not exist"; exit 1
fi
DIR="$(cd -- "$DIR" && pwd -P)"
[[ -e "$DIR/$MARKER" ]] || { err "$DIR was not created by start.sh (no $MARKER)"; exit 1; }
readonly PASSWD_FILE="$DIR/s3fs.passwd" RCLONE_CONF="$DIR/rclone.conf"
# Paths are matched against /proc/self/mountinfo (which escapes whitespace)
# and go into comma-separated s3fs options.
readonly SAFE_PATH='^[A-Za-z0-9_./+@%:=-]+$'
if [[ -n "$MNT" ]]; then
    MNT="$(realpath -m -- "$MNT")"
    [[ "$MNT" =~ $SAFE_PATH ]] \
        || usage_error "MOUNTPOINT path must not contain spaces, commas or special characters: '$MNT'"
fi
if [[ -n "$CDIR" ]]; then
    CDIR="$(realpath -m -- "$CDIR")"
    [[ "$CDIR" =~ $SAFE_PATH ]] \
        || usage_error "CDIR path must not contain spaces, commas or special characters: '$CDIR'"
    [[ "$CDIR/" != "$MNT/"* && "$MNT/" != "$CDIR/"* ]] \
        || usage_error "CDIR ($CDIR) and MOUNTPOINT ($MNT) must not contain each other"
fi

# ------------------------------------------------------------------ helpers

# mounted_at, argv0, proc_state, to_bytes
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The argument that ties a process to this DIR.
dir_arg() {
    case "$1" in
        s3fs)   echo "passwd_file=$PASSWD_FILE" ;;
        rclone) echo "--config=$RCLONE_CONF" ;;
    esac
}

# Prints the pid in DIR/run/$1.$2.pid if it is a live $1 (s3fs or rclone)
# started for this DIR (see dir_arg) and mount point $3; fails otherwise. A
# zombie has an empty cmdline: dead. As stop.sh: a stale pid file with a
# reused pid kills nothing.
live_pid() {
    local tool="$1" pid argv=() a dir_ok=0 mnt_ok=0 want
    pid="$(cat -- "$DIR/run/$1.$2.pid" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    mapfile -d "" -t argv 2>/dev/null < "/proc/$pid/cmdline" || return 1
    [[ ${#argv[@]} -gt 0 && "${argv[0]##*/}" == "$tool" ]] || return 1
    want="$(dir_arg "$tool")"
    for a in "${argv[@]}"; do
        [[ "$a" == "$want" ]] && dir_ok=1
        [[ "$a" == "$3" ]] && mnt_ok=1
    done
    (( dir_ok && mnt_ok )) || return 1
    echo "$pid"
}

# Wait up to $4 seconds for record $1.$2 (mount point $3) to name no live process.
wait_exit() {
    local i
    for (( i = 0; i < $4 * 10; i++ )); do
        live_pid "$1" "$2" "$3" >/dev/null || return 0
        sleep 0.1
    done
    ! live_pid "$1" "$2" "$3" >/dev/null
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

# Files rclone (remote control at ADDR $1) has yet to upload: queued + in
# progress. Fails if it does not answer.
rclone_pending() {
    local out q p
    out="$(curl -s --max-time 5 -X POST "http://$1/vfs/stats")" || return 1
    q="$(sed -n 's/.*"uploadsQueued": *\([0-9][0-9]*\).*/\1/p' <<<"$out")"
    p="$(sed -n 's/.*"uploadsInProgress": *\([0-9][0-9]*\).*/\1/p' <<<"$out")"
    [[ -n "$q" && -n "$p" ]] || return 1
    echo $(( q + p ))
}

# rclone exits on an unmount without uploading the files it still holds
# (they would go up only at the next mount with the same cache): wait.
wait_uploads() {
    local rcaddr="$1" n i last=""
    for (( i = 0; i < UPLOAD_WAIT_SECS * 4; i++ )); do
        n="$(rclone_pending "$rcaddr")" || { err "rclone's remote control ($rcaddr) does not answer; not waiting for uploads"; return 0; }
        (( n > 0 )) || return 0
        if [[ "$n" != "$last" ]] && (( i % 40 == 0 )); then
            echo "  rclone still has $n file(s) to upload; waiting"
            last="$n"
        fi
        sleep 0.25
    done
    err "rclone still has files to upload after ${UPLOAD_WAIT_SECS}s; unmounting anyway (they stay in its cache)"
}

# Unmount the mount recorded as DIR/run/$1.$2.{pid,mnt} and make sure its
# process is gone; then forget it.
unmount_one() {
    local tool="$1" n="$2" rec="$DIR/run/$1.$2"
    local mnt pid i lazy=0 rcaddr
    mnt="$(cat -- "$rec.mnt" 2>/dev/null)" || mnt=""
    if [[ -z "$mnt" ]]; then
        # Only a pid file: a mount that was being set up, or a broken record.
        err "$tool.$n: no mount point recorded in $rec.mnt; removing the record"
        rm -f -- "$rec.pid" "$rec.mnt" "$rec.cdir" "$rec.rc"
        return 0
    fi
    pid="$(live_pid "$tool" "$n" "$mnt")" || pid=""
    if mounted_at "$mnt" "fuse.$tool"; then
        rcaddr="$(cat -- "$rec.rc" 2>/dev/null)" || rcaddr=""
        if [[ "$tool" == rclone && -n "$pid" && -n "$rcaddr" ]]; then
            wait_uploads "$rcaddr"
        fi
        echo "unmounting $mnt${pid:+ ($tool pid $pid)}"
        for (( i = 0; i < BUSY_WAIT_SECS * 10; i++ )); do
            fuse_umount "$mnt" 2>/dev/null && break
            sleep 0.1
        done
        if mounted_at "$mnt" "fuse.$tool"; then
            err "$mnt is busy (in use: fuser -vm $mnt); detaching it lazily"
            fuse_umount "$mnt" -z || true
            lazy=1
        fi
    elif [[ -z "$pid" ]]; then
        rm -f -- "$rec.pid" "$rec.mnt" "$rec.cdir" "$rec.rc"
        return 0   # neither mounted nor running: nothing to do
    fi
    # After a lazy unmount the process serves the open files until they are
    # closed: do not wait for that.
    if [[ -n "$pid" ]] && { (( lazy )) || ! wait_exit "$tool" "$n" "$mnt" "$EXIT_WAIT_SECS"; }; then
        (( lazy )) || err "$tool pid $pid did not exit within ${EXIT_WAIT_SECS}s of the unmount; sending SIGTERM"
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_exit "$tool" "$n" "$mnt" "$TERM_WAIT_SECS"; then
            err "$tool pid $pid still alive; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            if ! wait_exit "$tool" "$n" "$mnt" "$KILL_WAIT_SECS"; then
                err "could not stop $tool pid $pid"
                return 1
            fi
        fi
    fi
    # A process that died (or was killed) leaves a dead mount behind
    # ("Transport endpoint is not connected").
    if mounted_at "$mnt" "fuse.$tool"; then
        fuse_umount "$mnt" -z || { err "could not unmount $mnt"; return 1; }
    fi
    rm -f -- "$rec.pid" "$rec.mnt" "$rec.cdir" "$rec.rc"
}

# "TOOL N" for the records DIR/run/TOOL.N.{pid,mnt}, optionally only those
# of mount point $1.
records() {
    local f n tool
    shopt -s nullglob
    for tool in "${TOOLS[@]}"; do
        for f in "$DIR/run/$tool".*.pid "$DIR/run/$tool".*.mnt; do
            n="${f##*/"$tool".}"; n="${n%.*}"
            [[ "$n" =~ ^[0-9]+$ ]] || continue
            if [[ -n "${1:-}" ]]; then
                [[ "$(cat -- "$DIR/run/$tool.$n.mnt" 2>/dev/null)" == "$1" ]] || continue
            fi
            echo "$tool $n"
        done | sort -u -k2,2n
    done
}

# ------------------------------------------------------------------ unmount

if (( UNMOUNT )); then
    mapfile -t RECS < <(records "$MNT")
    if [[ ${#RECS[@]} -eq 0 ]]; then
        if [[ -n "$MNT" ]] && mounted_at "$MNT"; then
            err "$MNT is mounted, but not by s3-mount.sh for $DIR; not touching it"
            exit 1
        fi
        echo "s3-mount.sh: no S3 mount recorded in $DIR${MNT:+ for $MNT}; nothing to unmount"
        exit 0
    fi
    rc=0
    for r in "${RECS[@]}"; do
        # shellcheck disable=SC2086  # r is "TOOL N"
        unmount_one $r || rc=1
    done
    exit "$rc"
fi

# -------------------------------------------------------------------- mount

env_value() { sed -n "s/^$1=//p" "$DIR/client.env" 2>/dev/null | tail -n 1; }
ENDPOINT="$(env_value TIERFS_S3_ENDPOINT)"
ACCESS_KEY="$(env_value TIERFS_S3_ACCESS_KEY)"
SECRET_KEY="$(env_value TIERFS_S3_SECRET_KEY)"
BUCKET="$(env_value TIERFS_S3_BUCKET)"
if [[ -z "$ENDPOINT" || -z "$ACCESS_KEY" || -z "$SECRET_KEY" || -z "$BUCKET" ]]; then
    err "$DIR/client.env has no TIERFS_S3_* settings: start the cluster with start.sh --rgw"
    exit 1
fi
[[ -x "/usr/bin/$TOOL" ]] || { err "/usr/bin/$TOOL is missing (Debian package $TOOL)"; exit 1; }
if [[ "$TOOL" == rclone ]] && ! command -v fusermount >/dev/null; then
    # rclone mounts through the fusermount helper; fuse3 provides it as a
    # link to fusermount3.
    err "rclone mount needs fusermount (Debian package fuse3)"
    exit 1
fi

SIZE_BYTES="$(to_bytes "$SIZE")"

mkdir -p -- "$MNT" || { err "cannot create mount point $MNT"; exit 1; }
if mounted_at "$MNT"; then
    err "something is already mounted at $MNT"
    exit 1
fi
mkdir -p -- "$CDIR" || { err "cannot create cache directory $CDIR"; exit 1; }
while read -r t n; do
    [[ -n "$t" ]] || continue
    if [[ "$(cat -- "$DIR/run/$t.$n.cdir" 2>/dev/null)" == "$CDIR" ]] \
        && live_pid "$t" "$n" "$(cat -- "$DIR/run/$t.$n.mnt" 2>/dev/null)" >/dev/null; then
        err "$CDIR is the cache of another mount ($t at $(cat -- "$DIR/run/$t.$n.mnt")); use one CDIR per mount"
        exit 1
    fi
done < <(records)

if [[ "$TOOL" == s3fs ]]; then
    # s3fs refuses to start unless it has multipart_size x parallel_count
    # MB of room beyond ensure_diskfree (10 x 5 by default).
    part_mb=10 parallel=5
    for a in "${EXTRA[@]}"; do
        IFS=, read -r -a opts <<<"$a"
        for o in "${opts[@]}"; do
            [[ "$o" =~ ^multipart_size=([0-9]+)$ ]] && part_mb="${BASH_REMATCH[1]}"
            [[ "$o" =~ ^parallel_count=([0-9]+)$ ]] && parallel="${BASH_REMATCH[1]}"
        done
    done
    if (( SIZE_BYTES < (part_mb * parallel) << 20 )); then
        err "s3fs needs a cache of at least multipart_size x parallel_count = $part_mb x $parallel MB; --cache-size $SIZE is less"
        exit 1
    fi
    # ensure_diskfree (MB) = free space + CDIR's own use (blocks: cache
    # files are sparse) - SIZE; see the usage.
    avail="$(df -B1 --output=avail -- "$CDIR" | tail -n 1 | tr -d ' ')"
    used="$(du -s -B1 -- "$CDIR" | cut -f1)"
    [[ "$avail" =~ ^[0-9]+$ && "$used" =~ ^[0-9]+$ ]] || { err "cannot tell the free space of $CDIR"; exit 1; }
    if (( SIZE_BYTES < used + ((part_mb * parallel) << 20) )); then
        # s3fs only cleans its cache once it runs, not before that check.
        err "$CDIR already holds $(( used >> 20 )) MB: too much for s3fs to start with --cache-size $SIZE; empty it or pick another CDIR"
        exit 1
    fi
    keep=$(( (avail + used - SIZE_BYTES) >> 20 ))
    if (( keep < 1 )); then
        err "warning: the file system of $CDIR has $(( (avail + used) >> 20 )) MB for the cache, less than --cache-size $SIZE; the disk is the bound"
        keep=1   # s3fs raises it to multipart_size
    fi
fi

# Claim the first free record number; noclobber makes that atomic against a
# concurrent s3-mount.sh on the same DIR.
N=0
while ! ( set -C; : > "$DIR/run/$TOOL.$N.pid" ) 2>/dev/null; do
    (( ++N < 1000 )) || { err "no free record number in $DIR/run"; exit 1; }
done
readonly REC="$DIR/run/$TOOL.$N"
echo "$MNT" > "$REC.mnt"
echo "$CDIR" > "$REC.cdir"
readonly LOG="$DIR/log/$TOOL.$N.log" STARTUP_LOG="$DIR/log/$TOOL.$N.startup.log"
: > "$STARTUP_LOG"

SUCCEEDED=0
CHILD=""
on_exit() {
    local rc=$?
    (( ! SUCCEEDED )) || return 0
    # The startup log holds this run's output only; the log accumulates.
    tail_logs "$STARTUP_LOG" "$LOG"
    echo "s3-mount.sh: failed (exit $rc); cleaning up" >&2
    # Our own child, maybe not even the tool yet: signal it by pid.
    [[ -z "$CHILD" ]] || stop_child "$CHILD" "$TERM_WAIT_SECS" "$KILL_WAIT_SECS"
    unmount_one "$TOOL" "$N" >&2 || true
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# Credentials files, rewritten for every mount (same content), mode 600,
# replaced atomically: a concurrent mount may be reading them.
write_private() {
    local tmp="$1.tmp.$$"
    ( umask 077; cat > "$tmp" ) && mv -f -- "$tmp" "$1"
}

CMD=()
case "$TOOL" in
    s3fs)
        printf '%s:%s\n' "$ACCESS_KEY" "$SECRET_KEY" | write_private "$PASSWD_FILE"
        CMD=(/usr/bin/s3fs "$BUCKET" "$MNT" -f
             -o "url=$ENDPOINT" -o use_path_request_style -o "$(dir_arg s3fs)"
             -o "use_cache=$CDIR" -o "ensure_diskfree=$keep" -o enable_noobj_cache
             -o "logfile=$LOG" -o dbglevel=err)
        CACHE_DESC="cache $CDIR, ensure_diskfree=$keep MB"
        ;;
    rclone)
        write_private "$RCLONE_CONF" <<EOF
[$RCLONE_REMOTE]
type = s3
provider = Ceph
endpoint = $ENDPOINT
access_key_id = $ACCESS_KEY
secret_access_key = $SECRET_KEY
EOF
        RC_PORT="$(/usr/bin/python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"
        echo "127.0.0.1:$RC_PORT" > "$REC.rc"
        CMD=(/usr/bin/rclone mount "$RCLONE_REMOTE:$BUCKET" "$MNT" "$(dir_arg rclone)"
             --vfs-cache-mode full --cache-dir "$CDIR" --vfs-cache-max-size "${SIZE_BYTES}B"
             --vfs-cache-max-age "$RCLONE_MAX_AGE"
             --rc --rc-addr "127.0.0.1:$RC_PORT"
             --log-file "$LOG")
        CACHE_DESC="cache $CDIR, --vfs-cache-max-size $SIZE; remote control 127.0.0.1:$RC_PORT"
        ;;
esac

T0=$(date +%s%N)
# Foreground process started in the background in its own session, so that
# its pid is $! and no terminal signal reaches it; stdin from /dev/null,
# output to a startup log, inherited fds > 2 closed (as start.sh does).
(
    for fd in /proc/"$BASHPID"/fd/*; do
        fd="${fd##*/}"
        if (( fd > 2 )); then exec {fd}>&- 2>/dev/null || true; fi
    done
    unset AWS_CA_BUNDLE
    exec setsid "${CMD[@]}" "${EXTRA[@]}" </dev/null >"$STARTUP_LOG" 2>&1
) &
CHILD=$!
echo "$CHILD" > "$REC.pid"

# The mount shows up in mountinfo once the tool has checked the bucket; a
# stat of the root then proves that requests are answered.
while :; do
    if (( $(date +%s%N) - T0 > MOUNT_WAIT_SECS * 1000000000 )); then
        err "timed out after ${MOUNT_WAIT_SECS}s waiting for the mount at $MNT"
        exit 1
    fi
    case "$(proc_state "$CHILD")" in
        gone|Z|X) err "$TOOL exited before the mount was up"; exit 1 ;;
    esac
    # Until the subshell has exec'd setsid and setsid the tool, the pid
    # reads bash or setsid (or nothing, during an execve).
    if [[ "$(argv0 "$CHILD")" != "$TOOL" ]]; then
        sleep 0.05
        continue
    fi
    if mounted_at "$MNT" "fuse.$TOOL" && timeout 10 stat -- "$MNT" >/dev/null 2>&1; then
        break
    fi
    sleep 0.1
done
live_pid "$TOOL" "$N" "$MNT" >/dev/null || { err "$TOOL exited after mounting $MNT"; exit 1; }
SUCCEEDED=1

printf 'mounted S3 bucket %s (%s) at %s with %s in %ss (pid %s)\n' "$BUCKET" "$ENDPOINT" "$MNT" "$TOOL" \
    "$(echo "$(( $(date +%s%N) - T0 ))" | awk '{ printf "%.1f", $1 / 1e9 }')" "$CHILD"
echo "  $CACHE_DESC   log: $LOG"
echo "  unmount: $0 --unmount $DIR $MNT"
