#!/usr/bin/env bash
# Start a throw-away single-node Ceph (Pacific) cluster for tierfs development
# and tests. Everything (conf, keyrings, data, logs, pid files, sockets) lives
# under DIR; daemons bind to 127.0.0.1 only, on free ports, so several
# clusters can run side by side. See README.md next to this script.
#
# Usage: start.sh [options] DIR        (stop it again with stop.sh DIR)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"  # to_bytes
readonly MARKER=".tierfs-dev-cluster"   # identifies a DIR made by this script
readonly MON_ID="a"
readonly MGR_ID="x"
readonly MDS_ID="a"
readonly CLIENT_USER="client.tierfs"
readonly FS_NAME="cephfs"                # --mds: the CephFS, its pools and user
readonly FS_META_POOL="cephfs_metadata"
readonly FS_DATA_POOL="cephfs_data"
readonly FS_USER="client.fs"
readonly RGW_ID="a"                      # --rgw: the radosgw, its S3 user and bucket
readonly RGW_USER="client.rgw.$RGW_ID"
readonly S3_UID="bench"
readonly S3_BUCKET="bench"
readonly PG_NUM=8
readonly DEADLINE_SECS=120               # overall budget until usable

# Ceph binaries (daemons too) pick these up from the environment; a caller's
# settings must not leak into (or redirect) this cluster.
unset CEPH_ARGS CEPH_CONF CEPH_KEYRING

usage() {
    cat <<'EOF'
Usage: start.sh [options] DIR

Start a single-node Ceph cluster whose files all live under DIR.
DIR must not exist or be empty (see --force).

Options:
  --osds N          number of OSDs (default 1)
  --pool NAME       pool to create (default tierfs)
  --pool-size S     replica count of the pool, 1..N (default 1)
  --bluestore       BlueStore OSDs on sparse files DIR/data/osd.N.block
                    (default: memstore, data held in OSD memory)
  --osd-size SIZE   BlueStore file size (sparse), e.g. 8G, 20G; at least 1G
                    (default 8G; ignored for memstore, whose capacity
                    limit is 16 GiB per OSD)
  --mgr             also start a ceph-mgr (off by default; not needed for
                    RADOS I/O, costs ~300 MB)
  --mds             also start a ceph-mds and create the CephFS "cephfs"
                    (pools cephfs_metadata + cephfs_data, size per
                    --pool-size) with user client.fs; mount it with
                    cephfs-mount.sh DIR MOUNTPOINT
  --rgw             also start a radosgw (S3, beast frontend on a free
                    127.0.0.1 port) with S3 user "bench" and bucket
                    "bench" (keys in DIR/client.env); mount the bucket with
                    s3-mount.sh --s3fs|--rclone DIR MOUNTPOINT ...
  --force           DIR holds a *stopped* cluster made by this script:
                    delete it and start afresh
  -h, --help        show this help
EOF
}

usage_error() {
    echo "start.sh: $*" >&2
    echo >&2
    usage >&2
    exit 2
}

log() { printf '[%5.1fs] %s\n' "$(elapsed)" "$*"; }
elapsed() { echo "$(( $(date +%s%N) - T0 ))" | awk '{ printf "%.1f", $1 / 1e9 }'; }
remaining() { echo $(( DEADLINE_SECS - ( $(date +%s%N) - T0 ) / 1000000000 )); }
# Seconds a single step may take: at most $1, and never past the deadline.
budget() { local r; r=$(remaining); (( r < $1 )) || r=$1; (( r > 1 )) || r=1; echo "$r"; }

# ---------------------------------------------------------------- arguments

OSDS=1
POOL=tierfs
POOL_SIZE=1
OBJECTSTORE=memstore
OSD_SIZE=8G
WITH_MGR=0
WITH_MDS=0
WITH_RGW=0
FORCE=0
DIR=""

need_value() { [[ $# -ge 2 && -n "$2" ]] || usage_error "option $1 needs a value"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --osds)       need_value "$@"; OSDS="$2"; shift 2 ;;
        --pool)       need_value "$@"; POOL="$2"; shift 2 ;;
        --pool-size)  need_value "$@"; POOL_SIZE="$2"; shift 2 ;;
        --bluestore)  OBJECTSTORE=bluestore; shift ;;
        --memstore)   OBJECTSTORE=memstore; shift ;;
        --osd-size)   need_value "$@"; OSD_SIZE="$2"; shift 2 ;;
        --mgr)        WITH_MGR=1; shift ;;
        --mds)        WITH_MDS=1; shift ;;
        --rgw)        WITH_RGW=1; shift ;;
        --force)      FORCE=1; shift ;;
        -h|--help)    usage; exit 0 ;;
        --)           shift; break ;;
        -*)           usage_error "unknown option '$1'" ;;
        *)            [[ -z "$DIR" ]] || usage_error "more than one DIR given ('$DIR', '$1')"
                      DIR="$1"; shift ;;
    esac
done
if [[ $# -gt 0 ]]; then
    [[ -z "$DIR" && $# -eq 1 ]] || usage_error "more than one DIR given"
    DIR="$1"
fi

[[ -n "$DIR" ]] || usage_error "missing DIR"
[[ "$OSDS" =~ ^[1-9][0-9]*$ ]] || usage_error "--osds must be a positive integer, got '$OSDS'"
[[ "$POOL_SIZE" =~ ^[1-9][0-9]*$ ]] || usage_error "--pool-size must be a positive integer, got '$POOL_SIZE'"
(( POOL_SIZE <= OSDS )) || usage_error "--pool-size $POOL_SIZE needs at least $POOL_SIZE OSDs (--osds $OSDS)"
[[ "$POOL" =~ ^[A-Za-z0-9_.-]+$ ]] || usage_error "--pool name must match [A-Za-z0-9_.-]+, got '$POOL'"
if (( WITH_MDS )) && [[ "$POOL" == "$FS_META_POOL" || "$POOL" == "$FS_DATA_POOL" ]]; then
    usage_error "--pool $POOL clashes with the CephFS pools of --mds ($FS_META_POOL, $FS_DATA_POOL)"
fi
if (( WITH_RGW )) && [[ "$POOL" == .rgw.root || "$POOL" == default.rgw.* ]]; then
    usage_error "--pool $POOL clashes with the pools radosgw creates (.rgw.root, default.rgw.*)"
fi
[[ "$OSD_SIZE" =~ ^[1-9][0-9]*[KMGT]?$ ]] || usage_error "--osd-size must look like 8G / 512M / bytes, got '$OSD_SIZE'"

# Sizes in bytes. Memstore's device size is only a capacity limit (data is held
# in the OSD's memory as it is written), so it is generous.
OSD_SIZE_BYTES=$(to_bytes "$OSD_SIZE")
(( OSD_SIZE_BYTES >= 1 << 30 )) || usage_error "--osd-size must be at least 1G (BlueStore needs room for its DB), got '$OSD_SIZE'"
MEMSTORE_BYTES=$(( 16 << 30 ))

DIR="$(realpath -m -- "$DIR")"   # absolute: the paths end up in ceph.conf
# ceph.conf values are split on whitespace and '$' starts a metavariable.
[[ "$DIR" =~ ^[A-Za-z0-9_./+@%:=-]+$ ]] || usage_error "DIR path must not contain spaces or special characters: '$DIR'"
mkdir -p -- "$DIR" 2>/dev/null || { echo "start.sh: cannot create directory '$DIR'" >&2; exit 1; }

readonly CONF="$DIR/ceph.conf"
readonly ADMIN_KEYRING="$DIR/client.admin.keyring"
readonly CLIENT_KEYRING="$DIR/$CLIENT_USER.keyring"
readonly MON_KEYRING="$DIR/mon.keyring"
readonly FS_KEYRING="$DIR/$FS_USER.keyring"
readonly RGW_KEYRING="$DIR/data/rgw.$RGW_ID/keyring"
readonly RGW_PIDFILE="$DIR/run/rgw.$RGW_ID.pid"

# ------------------------------------------------------- liveness (as stop.sh)

# True if pid file $1 names a live ceph daemon started with this DIR's conf.
# A zombie has an empty cmdline and so counts as dead.
daemon_alive() {
    local pid argv=() prev=""
    pid="$(cat -- "$1" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    mapfile -d "" -t argv 2>/dev/null < "/proc/$pid/cmdline" || return 1
    [[ ${#argv[@]} -gt 0 ]] || return 1
    case "${argv[0]##*/}" in ceph-mon|ceph-osd|ceph-mgr|ceph-mds|ceph-fuse|radosgw) ;; *) return 1 ;; esac
    local a
    for a in "${argv[@]}"; do
        [[ "$prev" == "-c" && "$a" == "$CONF" ]] && return 0
        prev="$a"
    done
    return 1
}

check_dir_is_fresh() {
    local pidfile
    for pidfile in "$DIR"/run/*.pid; do
        [[ -e "$pidfile" ]] || continue
        if daemon_alive "$pidfile"; then
            echo "start.sh: $DIR already holds a running cluster ($(basename "$pidfile" .pid) is pid $(cat "$pidfile"))." >&2
            echo "          Use it (source $DIR/client.env) or stop it: $SCRIPT_DIR/stop.sh $DIR" >&2
            exit 1
        fi
    done
    [[ -z "$(ls -A -- "$DIR")" ]] && return 0
    if [[ ! -e "$DIR/$MARKER" ]]; then
        echo "start.sh: $DIR is not empty and was not created by this script; refusing to touch it." >&2
        exit 1
    fi
    if (( ! FORCE )); then
        echo "start.sh: $DIR holds a stopped cluster. Use --force to wipe it and start afresh," >&2
        echo "          or pick a new/empty DIR." >&2
        exit 1
    fi
    log "--force: wiping stopped cluster in $DIR"
    # -xdev: never into a file system mounted below DIR (a CephFS mount).
    find "$DIR" -xdev -mindepth 1 -delete
}

# ------------------------------------------------------------------- helpers

# Every CLI call is bounded: the ceph CLI retries forever when the mon is down.
ceph_admin() { timeout "$(budget 20)" ceph -c "$CONF" -n client.admin --connect-timeout 10 "$@"; }

# Start a daemon detached from us: stdin from /dev/null, output to a startup
# log, and every inherited fd > 2 closed, so that a caller reading our output
# through a pipe is not held open by the daemon. The daemon forks itself into
# the background and writes its own pid file.
start_daemon() {
    local name="$1"; shift
    (
        local fd
        for fd in /proc/"$BASHPID"/fd/*; do
            fd="${fd##*/}"
            if (( fd > 2 )); then exec {fd}>&- 2>/dev/null || true; fi
        done
        # The foreground part of a daemon returns once it is initialised.
        exec timeout "$(budget "$DEADLINE_SECS")" "$@" -c "$CONF" </dev/null >"$DIR/log/$name.startup.log" 2>&1
    )
}

free_ports() {
    # Bind to port 0 so the kernel hands out currently-free ports; both are
    # held open at once so they differ.
    /usr/bin/python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

STARTED=0     # daemons may be running: stop them if we fail
SUCCEEDED=0

# Tail the daemons' own logs (not the cluster/audit logs) for a failure report.
show_logs() {
    local f
    shopt -s nullglob
    for f in "$DIR"/log/{mon,osd,mgr,mds,rgw}.*.log; do
        [[ -s "$f" ]] || continue
        echo "----- tail of $f" >&2
        tail -n 15 -- "$f" >&2
    done
}

die() {
    echo "start.sh: ERROR: $*" >&2
    show_logs
    exit 1
}

on_exit() {
    local rc=$?
    if (( ! SUCCEEDED && STARTED )); then
        echo "start.sh: failed (exit $rc); stopping the daemons started so far (files kept in $DIR)" >&2
        "$SCRIPT_DIR/stop.sh" "$DIR" >&2 || true
    fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM   # so that on_exit also cleans up after ^C / kill

# Poll "$@" until it succeeds, at most until the overall deadline.
wait_for() {
    local what="$1"; shift
    while ! "$@" >/dev/null 2>&1; do
        (( $(remaining) > 0 )) || die "timed out after ${DEADLINE_SECS}s waiting for $what"
        sleep 0.5
    done
}

# ------------------------------------------------------------------- steps

# A lone OSD has no heartbeat peers, so osd_heartbeat_grace only sets its PGs' read lease (x 0.8,
# fixed when they peer). Pacific's lone primary does not renew a lease that ran out while it was
# paused: its PGs stay "laggy" and clients' reads wait forever. 60 s (a 48 s lease) lets a test
# pause the OSD (SIGSTOP, a hung OSD) for up to 48 s. Several OSDs keep the default, so that a
# dead one is reported within 20 s.
one_osd_lease() {
    (( OSDS == 1 )) || return 0
    echo "# One OSD: a 48 s PG read lease (see start.sh)."
    echo "osd_heartbeat_grace = 60"
}

write_conf() {
    local fsid="$1" port_v2="$2" port_v1="$3"
    cat > "$CONF" <<EOF
# Generated by tierfs deploy/dev-cluster/start.sh. Everything lives in $DIR.
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port_v2,v1:127.0.0.1:$port_v1]
public_addr = 127.0.0.1
# Without cluster_addr the OSDs bind their cluster ports on 0.0.0.0.
cluster_addr = 127.0.0.1
ms_bind_ipv4 = true
ms_bind_ipv6 = false
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
# Keep every default path out of /var/{lib,log,run}/ceph. log_file, pid_file
# and admin_socket are set per daemon type below so that clients write none.
run_dir = $DIR/run
crash_dir = $DIR/crash
mon_cluster_log_file = default=$DIR/log/\$cluster.\$channel.log cluster=$DIR/log/\$cluster.log
# Single host: replicas go to different OSDs, not hosts. Must be set before
# the mon mkfs so the default CRUSH rule is built that way.
osd_crush_chooseleaf_type = 0
osd_pool_default_size = $POOL_SIZE
osd_pool_default_min_size = 1
osd_pool_default_pg_num = $PG_NUM
osd_pool_default_pgp_num = $PG_NUM
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_size_one = true
# Single host: count failure reports per OSD, not per host (the default), or a
# killed OSD is never marked down by its peers (mon_osd_min_down_reporters = 2
# would need two hosts) and clients wait on it instead of using another replica.
mon_osd_reporter_subtree_level = osd
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
# Commit mon map changes after 0.1s instead of batching them for 1s: the
# dozen admin commands of the bootstrap run much faster.
paxos_propose_interval = 0.1
# With --mgr: OSDs report PG statistics to the mgr, and the mgr digests them for
# the mon (ceph df, rados_cluster_stat, pool stats), every second instead of
# every 5 s, so usage figures catch up with writes quickly.
mgr_stats_period = 1
mon_mgr_digest_period = 1

[mon]
mon_data = $DIR/data/mon.\$id
keyring = $DIR/data/mon.\$id/keyring
log_file = $DIR/log/\$name.log
pid_file = $DIR/run/\$name.pid
admin_socket = $DIR/run/\$name.asok

[osd]
osd_data = $DIR/data/osd.\$id
keyring = $DIR/data/osd.\$id/keyring
log_file = $DIR/log/\$name.log
pid_file = $DIR/run/\$name.pid
admin_socket = $DIR/run/\$name.asok
osd_objectstore = $OBJECTSTORE
memstore_device_bytes = $MEMSTORE_BYTES
# Not \$osd_data/block: BlueStore makes that a symlink to this path.
bluestore_block_path = $DIR/data/osd.\$id.block
bluestore_block_size = $OSD_SIZE_BYTES
bluestore_block_create = true
# BlueStore defaults to a 4 GiB cache target per OSD; too much for a dev box.
osd_memory_target = 1073741824
$(one_osd_lease)

[mgr]
mgr_data = $DIR/data/mgr.\$id
keyring = $DIR/data/mgr.\$id/keyring
log_file = $DIR/log/\$name.log
pid_file = $DIR/run/\$name.pid
admin_socket = $DIR/run/\$name.asok

[client.admin]
keyring = $ADMIN_KEYRING

[$CLIENT_USER]
keyring = $CLIENT_KEYRING
EOF
    if (( WITH_RGW )); then
        cat >> "$CONF" <<EOF

# --rgw. radosgw creates its pools as it needs them, $PG_NUM PGs each:
# .rgw.root and default.rgw.{log,control,meta} at start, default.rgw.buckets.{index,data}
# with the first bucket and object, default.rgw.buckets.non-ec with the first multipart
# upload. With pool $POOL, the CephFS pools (--mds) and the mgr's device_health_metrics
# (1 PG) that makes at most $(( 10 * PG_NUM + 1 )) PGs; a pool's size is at most the number of OSDs,
# so no OSD holds more than $(( 10 * PG_NUM + 1 )) PG replicas: below mon_max_pg_per_osd (250).
[$RGW_USER]
keyring = $RGW_KEYRING
# beast takes endpoint=ADDR:PORT; port=PORT would listen on every address.
rgw_frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw_data = $DIR/data/rgw.$RGW_ID
log_file = $DIR/log/rgw.$RGW_ID.log
pid_file = $RGW_PIDFILE
admin_socket = $DIR/run/rgw.$RGW_ID.asok
EOF
    fi
    (( WITH_MDS )) || return 0
    cat >> "$CONF" <<EOF

[mds]
mds_data = $DIR/data/mds.\$id
keyring = $DIR/data/mds.\$id/keyring
log_file = $DIR/log/\$name.log
pid_file = $DIR/run/\$name.pid
admin_socket = $DIR/run/\$name.asok

[$FS_USER]
keyring = $FS_KEYRING
client_fs = $FS_NAME
EOF
}

make_keyrings() {
    {
        ceph-authtool "$MON_KEYRING" --create-keyring --gen-key -n mon. --cap mon 'allow *'
        ceph-authtool "$ADMIN_KEYRING" --create-keyring --gen-key -n client.admin \
            --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *'
        # The client user is created here (imported by the mon mkfs) rather
        # than with "ceph auth" later: one round trip less. Caps may name a
        # pool that does not exist yet.
        ceph-authtool "$CLIENT_KEYRING" --create-keyring --gen-key -n "$CLIENT_USER" \
            --cap mon 'allow r' --cap osd "allow rwx pool=$POOL"
        ceph-authtool "$MON_KEYRING" --import-keyring "$ADMIN_KEYRING"
        ceph-authtool "$MON_KEYRING" --import-keyring "$CLIENT_KEYRING"
        if (( WITH_MDS )); then
            # The caps "ceph fs authorize $FS_NAME $FS_USER / rwp" would
            # give; the osd cap matches the pools by the application tag
            # that "ceph fs new" sets.
            ceph-authtool "$FS_KEYRING" --create-keyring --gen-key -n "$FS_USER" \
                --cap mon "allow r fsname=$FS_NAME" \
                --cap mds "allow rwp fsname=$FS_NAME" \
                --cap osd "allow rw tag cephfs data=$FS_NAME"
            mkdir -p "$DIR/data/mds.$MDS_ID"
            ceph-authtool "$DIR/data/mds.$MDS_ID/keyring" --create-keyring --gen-key -n "mds.$MDS_ID" \
                --cap mon 'allow profile mds' --cap osd 'allow rwx' --cap mds 'allow' \
                --cap mgr 'allow profile mds'
            ceph-authtool "$MON_KEYRING" --import-keyring "$FS_KEYRING"
            ceph-authtool "$MON_KEYRING" --import-keyring "$DIR/data/mds.$MDS_ID/keyring"
        fi
        if (( WITH_RGW )); then
            # mon 'allow rw': radosgw creates its own pools.
            mkdir -p "$DIR/data/rgw.$RGW_ID"
            ceph-authtool "$RGW_KEYRING" --create-keyring --gen-key -n "$RGW_USER" \
                --cap mon 'allow rw' --cap osd 'allow rwx'
            ceph-authtool "$MON_KEYRING" --import-keyring "$RGW_KEYRING"
        fi
    } >"$DIR/log/keyrings.log"
    chmod 600 "$MON_KEYRING" "$ADMIN_KEYRING" "$CLIENT_KEYRING"
    (( ! WITH_MDS )) || chmod 600 "$FS_KEYRING" "$DIR/data/mds.$MDS_ID/keyring"
    (( ! WITH_RGW )) || chmod 600 "$RGW_KEYRING"
}

start_mon() {
    local fsid="$1" port_v2="$2" port_v1="$3"
    monmaptool --create --enable-all-features --fsid "$fsid" \
        --addv "$MON_ID" "[v2:127.0.0.1:$port_v2,v1:127.0.0.1:$port_v1]" "$DIR/monmap" >/dev/null
    ceph-mon -c "$CONF" --mkfs -i "$MON_ID" --monmap "$DIR/monmap" --keyring "$MON_KEYRING" \
        >"$DIR/log/mon.$MON_ID.mkfs.log" 2>&1 || die "ceph-mon --mkfs failed"
    STARTED=1
    start_daemon "mon.$MON_ID" ceph-mon -i "$MON_ID" || die "ceph-mon failed to start (or timed out)"
    wait_for "the mon to answer" ceph_admin mon stat
}

# Register a new OSD with the mon and write its keyring; prints "ID UUID".
register_osd() {
    local uuid key
    uuid="$(uuidgen)"
    key="$(ceph-authtool --gen-print-key)"
    local id
    id="$(printf '{"cephx_secret": "%s"}' "$key" | ceph_admin osd new "$uuid" -i -)" || return 1
    [[ "$id" =~ ^[0-9]+$ ]] || return 1
    mkdir -p "$DIR/data/osd.$id"
    ceph-authtool "$DIR/data/osd.$id/keyring" --create-keyring -n "osd.$id" --add-key "$key" >/dev/null
    echo "$id $uuid"
}

mkfs_and_start_osd() {
    local id="$1" uuid="$2"
    ceph-osd -c "$CONF" -i "$id" --mkfs --osd-uuid "$uuid" \
        >"$DIR/log/osd.$id.mkfs.log" 2>&1 || { echo "ceph-osd --mkfs failed for osd.$id" >&2; return 1; }
    start_daemon "osd.$id" ceph-osd -i "$id" || { echo "ceph-osd failed to start (or timed out) for osd.$id" >&2; return 1; }
}

# Registers the OSDs, then runs their mkfs + start in the background (mkfs
# takes seconds for BlueStore) so the pool can be created meanwhile; collect
# them with wait_osds.
OSD_JOBS=()
start_osds() {
    local i r
    for (( i = 0; i < OSDS; i++ )); do
        r="$(register_osd)" || die "could not register OSD #$i with the mon (ceph osd new)"
        # shellcheck disable=SC2086  # r is "ID UUID"
        mkfs_and_start_osd $r &
        OSD_JOBS+=($!)
    done
}

wait_osds() {
    local job failed=0
    for job in "${OSD_JOBS[@]}"; do wait "$job" || failed=1; done
    (( ! failed )) || die "could not start all OSDs"
}

create_pool() {
    ceph_admin osd pool create "$POOL" "$PG_NUM" "$PG_NUM" replicated >/dev/null 2>&1 \
        || die "could not create pool $POOL"
    if (( POOL_SIZE == 1 )); then
        ceph_admin osd pool set "$POOL" size 1 --yes-i-really-mean-it >/dev/null 2>&1
    else
        ceph_admin osd pool set "$POOL" size "$POOL_SIZE" >/dev/null 2>&1
    fi || die "could not set size $POOL_SIZE on pool $POOL"
    ceph_admin osd pool application enable "$POOL" tierfs >/dev/null 2>&1 \
        || die "could not enable application on pool $POOL"
}

# The MDS registers as a standby (no file system needed yet) and is made
# active for rank 0 by the mon once the file system exists; it then writes its
# journal to the OSDs. Started in the background like the OSDs; collect it
# with wait_mds.
MDS_JOB=""
start_mds() {
    start_daemon "mds.$MDS_ID" ceph-mds -i "$MDS_ID" &
    MDS_JOB=$!
}

wait_mds() {
    wait "$MDS_JOB" || die "ceph-mds failed to start (or timed out)"
}

# "ceph fs new" is a mon command (no mgr needed, unlike "ceph fs volume
# create"); it tags both pools with application cephfs. The pools get size
# POOL_SIZE and min_size 1 from osd_pool_default_{size,min_size} in ceph.conf,
# like the tierfs pool.
create_fs() {
    local p
    for p in "$FS_META_POOL" "$FS_DATA_POOL"; do
        ceph_admin osd pool create "$p" "$PG_NUM" "$PG_NUM" replicated >/dev/null 2>&1 \
            || die "could not create pool $p"
    done
    ceph_admin fs new "$FS_NAME" "$FS_META_POOL" "$FS_DATA_POOL" >/dev/null 2>&1 \
        || die "could not create the file system $FS_NAME (ceph fs new)"
}

mds_active() {
    ceph_admin fs get "$FS_NAME" -f json 2>/dev/null | grep -q '"state":"up:active"'
}

start_mgr() {
    mkdir -p "$DIR/data/mgr.$MGR_ID"
    ceph_admin auth get-or-create "mgr.$MGR_ID" mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
        -o "$DIR/data/mgr.$MGR_ID/keyring" >/dev/null 2>&1 || die "could not create the mgr key"
    start_daemon "mgr.$MGR_ID" ceph-mgr -i "$MGR_ID" || die "ceph-mgr failed to start (or timed out)"
}

# radosgw forks into the background at once (its foreground part returns in
# ~0.1 s), then creates its pools and starts listening once they are
# usable. It is started once the OSDs serve I/O (in parallel with the MDS
# becoming active): started with the OSDs, while they were still booting, it
# answered ~5 s after them, instead of ~2 s. wait_rgw waits until the S3
# endpoint answers HTTP.
start_rgw() {
    start_daemon "rgw.$RGW_ID" radosgw -n "$RGW_USER" \
        || die "radosgw failed to start (or timed out); see $DIR/log/rgw.$RGW_ID.startup.log"
}

# Any HTTP status will do (an anonymous GET / is answered 200 with an empty
# bucket list); 000 means no answer.
rgw_answers() {
    local code
    code="$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time "$(budget 5)" "$S3_ENDPOINT/" 2>/dev/null)" || true
    [[ "$code" =~ ^[1-5][0-9][0-9]$ ]]
}

wait_rgw() {
    local seen=0 t_start
    t_start=$(remaining)
    while ! rgw_answers; do
        # The pid file appears just after the fork and goes when radosgw
        # exits (it gives up if it cannot set up its pools).
        if daemon_alive "$RGW_PIDFILE"; then
            seen=1
        elif (( seen || t_start - $(remaining) > 15 )); then
            die "radosgw is not running; see $DIR/log/rgw.$RGW_ID.log"
        fi
        (( $(remaining) > 0 )) || die "timed out after ${DEADLINE_SECS}s waiting for radosgw to answer on $S3_ENDPOINT"
        sleep 0.25
    done
}

# S3 request signed as the S3 user (SigV4 by curl; radosgw wants the payload
# hash header, which curl does not send). The credentials go to curl on
# stdin, not on its command line. Prints the HTTP status; the body goes to
# DIR/tmp/s3.out.
s3_request() {
    printf 'user = "%s:%s"\n' "$S3_ACCESS_KEY" "$S3_SECRET_KEY" |
        curl -s --noproxy '*' -K - --max-time "$(budget 10)" --aws-sigv4 "aws:amz:us-east-1:s3" \
            -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -o "$DIR/tmp/s3.out" -w '%{http_code}' "$@"
}

# The S3 user (keys generated by radosgw-admin), its bucket, and one object
# written, read back and deleted through the gateway.
setup_s3() {
    local keys code probe="$DIR/tmp/probe.in"
    timeout "$(budget 30)" radosgw-admin -c "$CONF" -n client.admin user create --uid "$S3_UID" \
        --display-name "tierfs dev-cluster S3 user" >"$DIR/tmp/s3-user.json" 2>"$DIR/log/radosgw-admin.log" \
        || die "could not create the S3 user $S3_UID (radosgw-admin user create); see $DIR/log/radosgw-admin.log"
    keys="$(/usr/bin/python3 -c 'import json, sys
k = json.load(open(sys.argv[1]))["keys"][0]
print(k["access_key"], k["secret_key"])' "$DIR/tmp/s3-user.json")" || die "no S3 keys in the output of radosgw-admin user create"
    rm -f "$DIR/tmp/s3-user.json"
    read -r S3_ACCESS_KEY S3_SECRET_KEY <<<"$keys"
    code="$(s3_request -X PUT "$S3_ENDPOINT/$S3_BUCKET")" || true
    [[ "$code" == 200 ]] || die "could not create the bucket $S3_BUCKET (HTTP $code: $(head -c 300 "$DIR/tmp/s3.out" 2>/dev/null))"
    head -c 4096 /dev/urandom > "$probe"
    code="$(s3_request -T "$probe" "$S3_ENDPOINT/$S3_BUCKET/start-probe")" || true
    [[ "$code" == 200 ]] || die "could not write an object to bucket $S3_BUCKET (HTTP $code)"
    code="$(s3_request "$S3_ENDPOINT/$S3_BUCKET/start-probe")" || true
    { [[ "$code" == 200 ]] && cmp -s "$probe" "$DIR/tmp/s3.out"; } \
        || die "could not read back the object written to bucket $S3_BUCKET (HTTP $code)"
    code="$(s3_request -X DELETE "$S3_ENDPOINT/$S3_BUCKET/start-probe")" || true
    [[ "$code" == 204 ]] || die "could not delete the probe object in bucket $S3_BUCKET (HTTP $code)"
    rm -f "$probe" "$DIR/tmp/s3.out"
}

all_osds_up() {
    ceph_admin osd stat -f json 2>/dev/null | grep -q "\"num_up_osds\":$OSDS,"
}

# The mon reports the cluster's capacity (ceph df, rados_cluster_stat, and so statfs of a mount)
# as zeros until the mgr has digested the OSDs' first statistics.
capacity_reported() {
    ceph_admin df -f json 2>/dev/null | grep -q '"total_bytes":[1-9]'
}

# One write + read-back as the client user; bounded per attempt.
rados_roundtrip() {
    local probe="$DIR/tmp/probe.in" got="$DIR/tmp/probe.out"
    timeout "$(budget 10)" rados -c "$CONF" -n "$CLIENT_USER" -p "$POOL" put start-probe "$probe" || return 1
    timeout "$(budget 10)" rados -c "$CONF" -n "$CLIENT_USER" -p "$POOL" get start-probe "$got" || return 1
    cmp -s "$probe" "$got"
}

write_client_env() {
    cat > "$DIR/client.env" <<EOF
TIERFS_CEPH_CONF=$CONF
TIERFS_CEPH_KEYRING=$CLIENT_KEYRING
TIERFS_CEPH_USER=$CLIENT_USER
TIERFS_CEPH_POOL=$POOL
TIERFS_CEPH_ADMIN_KEYRING=$ADMIN_KEYRING
EOF
    if (( WITH_MDS )); then
        cat >> "$DIR/client.env" <<EOF
TIERFS_CEPHFS_NAME=$FS_NAME
TIERFS_CEPHFS_USER=$FS_USER
TIERFS_CEPHFS_KEYRING=$FS_KEYRING
TIERFS_CEPHFS_METADATA_POOL=$FS_META_POOL
TIERFS_CEPHFS_DATA_POOL=$FS_DATA_POOL
EOF
    fi
    (( WITH_RGW )) || return 0
    # It now holds a secret, like the keyrings.
    chmod 600 "$DIR/client.env"
    cat >> "$DIR/client.env" <<EOF
TIERFS_S3_ENDPOINT=$S3_ENDPOINT
TIERFS_S3_ACCESS_KEY=$S3_ACCESS_KEY
TIERFS_S3_SECRET_KEY=$S3_SECRET_KEY
TIERFS_S3_BUCKET=$S3_BUCKET
EOF
}

# --------------------------------------------------------------------- main

T0=$(date +%s%N)
check_dir_is_fresh
mkdir -p "$DIR"/{data,log,run,crash,tmp}
touch "$DIR/$MARKER"

RGW_PORT=""
if (( WITH_RGW )); then
    read -r PORT_V2 PORT_V1 RGW_PORT < <(free_ports 3)
else
    read -r PORT_V2 PORT_V1 < <(free_ports 2)
fi
S3_ENDPOINT="http://127.0.0.1:$RGW_PORT"
S3_ACCESS_KEY="" S3_SECRET_KEY=""
FSID="$(uuidgen)"
log "cluster $FSID in $DIR: mon on 127.0.0.1:$PORT_V2 (v2) / $PORT_V1 (v1)," \
    "$OSDS $OBJECTSTORE OSD(s), pool '$POOL' size $POOL_SIZE$( (( WITH_MGR )) && echo ', mgr')$( (( WITH_MDS )) && echo ', mds')$( (( WITH_RGW )) && echo ", rgw on $S3_ENDPOINT")"
write_conf "$FSID" "$PORT_V2" "$PORT_V1"
make_keyrings

start_mon "$FSID" "$PORT_V2" "$PORT_V1"
log "mon.$MON_ID up"
if (( ! WITH_MGR )); then
    # Without a mgr the mon raises MGR_DOWN after a grace period; the mgr is
    # not needed for RADOS I/O, so keep the health output clean.
    ceph_admin health mute MGR_DOWN --sticky >/dev/null 2>&1 || true
fi
start_osds
(( ! WITH_MDS )) || start_mds
create_pool
log "pool '$POOL' created"
if (( WITH_MDS )); then
    create_fs
    log "file system '$FS_NAME' created"
fi
wait_osds
log "$OSDS OSD(s) started"
if (( WITH_MDS )); then
    wait_mds
    log "mds.$MDS_ID started"
fi
if (( WITH_MGR )); then
    start_mgr
    log "mgr.$MGR_ID started"
fi

# Waiting for every OSD (not just the first write) means a replicated pool
# really has its replicas placed once we return.
wait_for "all $OSDS OSD(s) to be up" all_osds_up
head -c 4096 /dev/urandom > "$DIR/tmp/probe.in"
wait_for "a rados write+read as $CLIENT_USER on pool '$POOL'" rados_roundtrip
timeout 10 rados -c "$CONF" -n "$CLIENT_USER" -p "$POOL" rm start-probe >/dev/null 2>&1 || true
rm -f "$DIR/tmp/probe.in" "$DIR/tmp/probe.out"
(( ! WITH_MGR )) || wait_for "the mgr to report the cluster's capacity" capacity_reported
(( ! WITH_RGW )) || start_rgw
if (( WITH_MDS )); then
    wait_for "mds.$MDS_ID to become active for '$FS_NAME'" mds_active
    log "mds.$MDS_ID active"
fi
if (( WITH_RGW )); then
    wait_rgw
    log "rgw.$RGW_ID answers on $S3_ENDPOINT"
    setup_s3
    log "S3 user '$S3_UID' and bucket '$S3_BUCKET' created"
fi

write_client_env
SUCCEEDED=1
TOOK="$(elapsed)"
printf '[%5.1fs] usable after %ss\n' "$TOOK" "$TOOK"
cat <<EOF
  source $DIR/client.env
  rados -c \$TIERFS_CEPH_CONF -n \$TIERFS_CEPH_USER -p \$TIERFS_CEPH_POOL ls
  ceph -c $CONF -s
EOF
(( ! WITH_MDS )) || echo "  mount CephFS: $SCRIPT_DIR/cephfs-mount.sh $DIR MOUNTPOINT"
(( ! WITH_RGW )) || echo "  mount S3:     $SCRIPT_DIR/s3-mount.sh --s3fs|--rclone $DIR MOUNTPOINT --cache-dir CDIR --cache-size SIZE"
echo "  stop: $SCRIPT_DIR/stop.sh $DIR"
