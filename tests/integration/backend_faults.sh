#!/usr/bin/env bash
# Back-end faults on real Ceph clusters of its own (it stops daemons, so not the shared one):
#  1. one BlueStore OSD (with a mgr, for statfs figures): the OSD paused (a hung OSD), then
#     killed and started again (a dead one), then the mon killed and started again, each while
#     readers of cached files run. While it is down: cached reads keep succeeding with the right
#     bytes; uncached reads fail with EIO (the OSD down) within backend.timeout + a margin, never
#     hang; fsync fails with EIO (OSD down) and the bytes stay staged; statfs answers at once
#     with the last known figures. Then everything resumes without a remount: uncached reads
#     succeed, the fsync that failed succeeds, and after a remount every byte is there.
#  2. three memstore OSDs, pool size 2: one OSD killed during a read workload of four readers;
#     it finishes with every byte right.
# Figures are printed as "FIGURE name seconds" lines (worst-case EIO latency of reads and fsync,
# statfs latency while down, time to resume).
# Usage: backend_faults.sh TIERFS
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
deploy=$(cd "$here/../../deploy/dev-cluster" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
timeout_s=${BACKEND_FAULTS_TIMEOUT:-4} # backend.timeout of the mount, in seconds
# What an EIO may take beyond it, for the assertion: a read that found the back end down waits
# DataReader::kDownFetchWait (1 s) for its chunk, plus a second for a loaded machine.
margin_s=2
faults=(python3 "$here/backend_faults.py")

setup_mount_test
clusters=()
cleanup() {
  local rc=$? c d
  cleanup_mount "$mnt"
  for c in "${clusters[@]}"; do
    for d in "$c"/run/osd.*.pid "$c"/run/mon.*.pid; do
      [[ -e $d ]] && "$deploy/daemon.sh" "$c" resume "$(basename "$d" .pid)" 2> /dev/null || true
    done
    if [[ -n ${KEEP:-} ]]; then
      "$deploy/stop.sh" "$c" > /dev/null 2>&1 || true
    else
      "$deploy/stop.sh" --purge "$c" > /dev/null 2>&1 || true
    fi
  done
  [[ -n ${KEEP:-} ]] || rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
t_start=$(date +%s)

# Files: 4 cached ones of 3 MiB (3 chunks of 1 MiB) read before each outage, and for each
# outage 4 cold ones that are only looked up before it.
make_files() {
  python3 - "$work/src" "$@" << 'PY'
import os, sys
root = sys.argv[1]
os.makedirs(f'{root}/cached', exist_ok=True)
for i in range(4):
    open(f'{root}/cached/c{i}', 'wb').write(os.urandom(3 << 20))
for tag in sys.argv[2:]:
    os.makedirs(f'{root}/cold/{tag}')
    for i in range(4):
        open(f'{root}/cold/{tag}/u{i}', 'wb').write(os.urandom((2 << 20) + i * 4099))
PY
  (cd "$work/src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/sums"
}

start_cluster() {
  local dir=$1
  shift
  clusters+=("$dir")
  "$deploy/start.sh" "$@" "$dir" > "$work/$(basename "$dir").start.log" 2>&1 ||
    { cat "$work/$(basename "$dir").start.log" >&2; fail "start.sh $* failed"; }
  grep "usable after" "$work/$(basename "$dir").start.log" | sed "s|^|$(basename "$dir"): |"
}

# flags: the cluster's back end; mflags: the mount's, with backend.timeout $2 and a memory cache
# of $3.
mount_flags() {
  read -ra flags <<< "$(rados_flags "$1/client.env" faults)"
  mflags=("${flags[@]}" --timeout "${2}s" --cache-memory "$3")
}

# ---------------------------------------------------------------- 1. one OSD, then the mon
phase1() {
  local cl=$work/cl1
  start_cluster "$cl" --bluestore --osd-size 2G --mgr
  # The pause below lasts ~20 s: within the 48 s PG read lease start.sh gives a one-OSD cluster
  # (after a longer one the OSD's PGs stay "laggy"; deploy/dev-cluster/README.md).
  make_files osd.0_pause osd.0_kill mon.a_kill
  mount_flags "$cl" "$timeout_s" 256M
  "$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null
  "$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null
  start_tierfs "$mnt" "$work/log1" "${mflags[@]}"
  mkdir "$mnt/out"
  # ceph-mgr's first statistics take a few seconds to reach the mon: statfs must have figures.
  for _ in $(seq 60); do
    [[ $(stat -f -c %b "$mnt") != 0 ]] && break
    sleep 1
  done
  [[ $(stat -f -c %b "$mnt") != 0 ]] || fail "statfs reports no capacity after 60 s"
  # Each outage also runs the statfs refresh: let the figures of the last one be renewed.
  "${faults[@]}" outage "$mnt" "$cl" osd.0 pause "$timeout_s" "$margin_s" eio
  "${faults[@]}" outage "$mnt" "$cl" osd.0 kill "$timeout_s" "$margin_s" eio
  "${faults[@]}" outage "$mnt" "$cl" mon.a kill "$timeout_s" "$margin_s" any
  stop_tierfs "$mnt" "$work/log1" || fail "the daemon did not stop cleanly after the outages"
  start_tierfs "$mnt" "$work/log1b" "${mflags[@]}"
  sync
  echo 3 > /proc/sys/vm/drop_caches
  "${faults[@]}" verify "$mnt" "$work/sums"
  stop_tierfs "$mnt" "$work/log1b"
  grep -c "warning" "$work/log1" | sed 's/^/phase 1: daemon warnings logged: /'
  "$deploy/stop.sh" --purge "$cl" > /dev/null
}

# ------------------------------------------------- 2. three OSDs, pool size 2, one killed
phase2() {
  local cl=$work/cl2
  rm -rf "$work/src"
  python3 - "$work/src" << 'PY'
import os, sys
root = sys.argv[1]
os.makedirs(f'{root}/shards')
for i in range(12):
    open(f'{root}/shards/s{i}', 'wb').write(os.urandom((4 << 20) + i * 65537))
PY
  (cd "$work/src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/sums"
  start_cluster "$cl" --osds 3 --pool-size 2
  # Readers must outlast the failover (the OSD marked down, its PGs peered on the others): a
  # deadline long enough that librados resends to the other replica instead of giving up.
  mount_flags "$cl" 30 16M # a cache smaller than the data: the readers keep fetching
  "$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null
  "$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null
  start_tierfs "$mnt" "$work/log2" "${mflags[@]}"
  "${faults[@]}" failover "$mnt" "$cl" 30
  timeout 20 ceph -c "$cl/ceph.conf" --connect-timeout 10 osd stat | sed 's/^/failover: /'
  stop_tierfs "$mnt" "$work/log2"
  "$deploy/stop.sh" --purge "$cl" > /dev/null
}

for phase in ${BACKEND_FAULTS_PHASES:-1 2}; do # a subset, to debug one: BACKEND_FAULTS_PHASES=2
  "phase$phase"
done
echo "FIGURE total_test_time $(($(date +%s) - t_start))"
echo "backend faults: OK"
