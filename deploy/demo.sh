#!/usr/bin/env bash
# The main job, from a clean checkout on Debian 12: installs what is missing, builds tierfs,
# starts a local single-node Ceph cluster (unless TIERFS_CEPH_CONF etc. point at one already),
# makes a tierfs volume in it, mounts it with a cache device, copies a sample tree in, lists and
# reads it back, remounts and reads it again from the cache device, and unmounts (stopping the
# cluster it started).
#
#   deploy/demo.sh          Ceph: a local cluster, or the one TIERFS_CEPH_CONF, TIERFS_CEPH_KEYRING,
#                           TIERFS_CEPH_USER (client.NAME) and TIERFS_CEPH_POOL point at
#   deploy/demo.sh --dir    the embedded dir back end instead (no Ceph at all)
set -euo pipefail
cd "$(dirname "$0")/.."
backend=rados
[[ ${1:-} == --dir ]] && backend=dir

deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build --target tierfs
tierfs=$PWD/build/tools/tierfs
"$tierfs" version

work=$(mktemp -d /tmp/tierfs-demo-XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
cluster=
cleanup() {
  if mountpoint -q "$mnt"; then
    echo "== unmounting $mnt"
    fusermount3 -u "$mnt" || umount -l "$mnt"
  fi
  if [[ -n $cluster ]]; then
    echo "== stopping the local cluster"
    deploy/dev-cluster/stop.sh --purge "$cluster"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [[ $backend == dir ]]; then
  flags=(--backend dir --path "$work/store")
else
  if [[ -z ${TIERFS_CEPH_CONF:-} ]]; then
    cluster=$work/cluster
    echo "== starting a local Ceph cluster in $cluster"
    deploy/dev-cluster/start.sh --mgr "$cluster"
    # shellcheck disable=SC1091
    source "$cluster/client.env"
  fi
  flags=(--backend rados --conf "$TIERFS_CEPH_CONF" --user "$TIERFS_CEPH_USER"
         --pool "$TIERFS_CEPH_POOL" --namespace demo)
  [[ -n ${TIERFS_CEPH_KEYRING:-} ]] && flags+=(--keyring "$TIERFS_CEPH_KEYRING")
fi

echo "== tierfs mkfs (${flags[*]})"
"$tierfs" mkfs "${flags[@]}" --if-missing
# A cache device: a 256 MiB file standing in for the node's NVMe.
cache=(--cache-device "$work/cache0=256M")
echo "== tierfs mount ${cache[*]} $mnt"
"$tierfs" mount "${flags[@]}" "${cache[@]}" --log "$work/tierfs.log" "$mnt"

sample=/usr/share/common-licenses
echo "== copying a sample tree ($sample) into the mount"
mkdir -p "$mnt/demo"
rm -rf "$mnt/demo/sample"
cp -a "$sample" "$mnt/demo/sample"
echo "== ls -la $mnt/demo/sample"
ls -la "$mnt/demo/sample"
echo "== reading it back"
diff -r "$sample" "$mnt/demo/sample" && echo "identical to $sample, byte for byte"
echo "== stored sizes (zstd where it pays): user.tierfs.stored_size"
python3 - "$mnt/demo/sample" <<'PY'
import os, sys
for name in sorted(os.listdir(sys.argv[1]))[:6]:
    path = os.path.join(sys.argv[1], name)
    if os.path.isfile(path) and not os.path.islink(path):
        stored = int(os.getxattr(path, 'user.tierfs.stored_size'))
        print(f'  {name:<16} {os.path.getsize(path):>8} bytes, stored as {stored:>8}')
PY
echo "== df"
df -h "$mnt" || true
echo "== remounting (a new daemon: its memory is empty) and reading the tree again"
fusermount3 -u "$mnt"
for _ in $(seq 50); do mountpoint -q "$mnt" || break; sleep 0.1; done
"$tierfs" mount "${flags[@]}" "${cache[@]}" --read-only --log "$work/tierfs.log" "$mnt"
if [[ $(id -u) == 0 ]]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
diff -r "$sample" "$mnt/demo/sample" && echo "identical again"
echo "== tierfs status (the daemon, over its control socket), and how much of the tree it holds"
"$tierfs" status
"$tierfs" status "$mnt/demo/sample"
echo "== what the cache did: user.tierfs.cache_stats"
python3 - "$mnt" <<'PY'
import json, os, sys
s = json.loads(os.getxattr(sys.argv[1], 'user.tierfs.cache_stats'))
print(f"  {s['device_hits']} chunks read from the cache device, {s['backend_reads']} from the "
      f"back end; the device holds {s['device_entries']} chunks "
      f"({s['device_occupied_bytes'] >> 20} MiB on disk, index included)")
PY
