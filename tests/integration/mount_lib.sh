# Shared by the mount tests: start and stop a `tierfs mount -f` daemon, and the flags of the
# test cluster. Source it; set TIERFS to the binary first.

# setup_mount_test: a fresh work directory $work with an empty mount point $mnt in it; at exit,
# whatever is mounted there is unmounted, our daemon stopped, and $work removed (kept when KEEP
# is set, to look at after a failure). Sets the EXIT trap; a test adding its own cleanup calls
# mount_test_cleanup from it.
setup_mount_test() {
  work=$(mktemp -d)
  mnt=$work/mnt
  mkdir "$mnt"
  trap mount_test_cleanup EXIT
}
mount_test_cleanup() {
  cleanup_mount "$mnt"
  [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now (for a daemon's metrics).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# rados_flags ENV_FILE NAMESPACE: back-end flags for the test cluster, one RADOS namespace per
# test so that tests share the cluster without sharing a volume.
rados_flags() {
  # shellcheck disable=SC1090
  source "$1"
  echo --backend rados --conf "$TIERFS_CEPH_CONF" --keyring "$TIERFS_CEPH_KEYRING" \
    --user "$TIERFS_CEPH_USER" --pool "$TIERFS_CEPH_POOL" --namespace "$2"
}

# rados_config ENV_FILE NAMESPACE: the same back end as a config file's [backend] section.
rados_config() {
  # shellcheck disable=SC1090
  source "$1"
  cat << EOF
[backend]
type = "rados"
[backend.rados]
conf = "$TIERFS_CEPH_CONF"
keyring = "$TIERFS_CEPH_KEYRING"
user = "$TIERFS_CEPH_USER"
pool = "$TIERFS_CEPH_POOL"
namespace = "$2"
EOF
}

# start_tierfs MOUNTPOINT LOG ARGS...: mounts in the foreground, in the background of this
# shell; sets TIERFS_PID. Fails (printing the log) if the mount is not up within 20 s.
start_tierfs() {
  local mnt=$1 log=$2
  shift 2
  "$TIERFS" mount -f "$@" "$mnt" > "$log" 2>&1 &
  TIERFS_PID=$!
  for _ in $(seq 200); do
    if mountpoint -q "$mnt"; then return 0; fi
    if ! kill -0 "$TIERFS_PID" 2> /dev/null; then
      echo "tierfs mount exited early:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "tierfs mount did not come up in 20 s" >&2
  cat "$log" >&2
  return 1
}

# stop_tierfs MOUNTPOINT LOG: unmounts (retrying while busy) and waits for the daemon; returns
# its exit status, which is non-zero if it could not commit what it held (or, in the sanitizer
# build, if it leaked); then the log is printed, since it says why.
stop_tierfs() {
  local mnt=$1 log=$2
  for _ in $(seq 50); do
    if ! mountpoint -q "$mnt" || fusermount3 -u "$mnt" 2> /dev/null; then break; fi
    sleep 0.2
  done
  local rc=0
  wait "$TIERFS_PID" || rc=$?
  TIERFS_PID=
  if [[ $rc != 0 ]]; then
    echo "tierfs mount exited with status $rc; its log:" >&2
    cat "$log" >&2
  fi
  return "$rc"
}

# cleanup_mount MOUNTPOINT: for traps; leaves nothing mounted and no daemon of ours running.
cleanup_mount() {
  local mnt=$1
  if mountpoint -q "$mnt" 2> /dev/null; then
    fusermount3 -u "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null || true
  fi
  if [[ -n ${TIERFS_PID:-} ]] && kill -0 "$TIERFS_PID" 2> /dev/null; then
    kill "$TIERFS_PID" 2> /dev/null || true
    wait "$TIERFS_PID" 2> /dev/null || true
  fi
}

# The cache tests' helpers. stats: the mount's cache statistics (JSON); field JSON KEY: one of
# them; read_all WHAT: every file of $work/src read back through $mnt with the page cache dropped
# (so each read reaches the daemon) and compared, failing with WHAT named.
stats() {
  python3 -c "import os, sys; print(os.getxattr(sys.argv[1], 'user.tierfs.cache_stats').decode())" "$mnt"
}
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
# Reads every file with the page cache dropped (so each read reaches the daemon) and compares.
read_all() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
  (cd "$work/src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/want"
  (cd "$mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/got"
  cmp -s "$work/want" "$work/got" || { diff "$work/want" "$work/got" | head; fail "$1: wrong data"; }
}
