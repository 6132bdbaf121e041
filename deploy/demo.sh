#!/usr/bin/env bash
# The main job, from a clean checkout on Debian 12: installs what is missing, builds tierfs,
# starts a local single-node Ceph cluster (unless TIERFS_CEPH_CONF etc. point at one already),
# makes a tierfs volume in it, mounts it, copies a sample tree in, lists and reads it back,
# and unmounts (stopping the cluster it started).
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
echo "== tierfs mount $mnt"
"$tierfs" mount "${flags[@]}" --log "$work/tierfs.log" "$mnt"

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
