#!/usr/bin/env bash
# The main job, from a clean checkout on Debian 12: installs what is missing, builds tierfs,
# starts a local single-node Ceph cluster (unless TIERFS_CEPH_CONF etc. point at one already),
# stores and reads back objects through `tierfs object`, and stops the cluster it started.
#
# To use an existing cluster instead: export TIERFS_CEPH_CONF, TIERFS_CEPH_KEYRING,
# TIERFS_CEPH_USER (client.NAME) and TIERFS_CEPH_POOL, then run this script.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build --target tierfs
tierfs=build/tools/tierfs
"$tierfs" version

if [[ -z ${TIERFS_CEPH_CONF:-} ]]; then
  cluster=$(mktemp -d /tmp/tierfs-demo-XXXXXX)
  trap 'echo "== stopping the local cluster"; deploy/dev-cluster/stop.sh --purge "$cluster"' EXIT
  echo "== starting a local Ceph cluster in $cluster"
  deploy/dev-cluster/start.sh "$cluster"
  # shellcheck disable=SC1091
  source "$cluster/client.env"
fi
flags=(--backend rados --conf "$TIERFS_CEPH_CONF" --user "$TIERFS_CEPH_USER"
       --pool "$TIERFS_CEPH_POOL" --namespace demo)
[[ -n ${TIERFS_CEPH_KEYRING:-} ]] && flags+=(--keyring "$TIERFS_CEPH_KEYRING")

echo "== tierfs object put/get through RADOS pool '$TIERFS_CEPH_POOL' as $TIERFS_CEPH_USER"
echo "hello from tierfs at $(date -u +%FT%TZ)" | "$tierfs" object put "${flags[@]}" greeting
"$tierfs" object put "${flags[@]}" tierfs-binary "$tierfs"
"$tierfs" object get "${flags[@]}" greeting
"$tierfs" object stat "${flags[@]}" tierfs-binary
"$tierfs" object get "${flags[@]}" tierfs-binary /tmp/tierfs-demo-copy.$$
cmp "$tierfs" /tmp/tierfs-demo-copy.$$ && echo "tierfs-binary: read back byte for byte"
rm -f /tmp/tierfs-demo-copy.$$
echo "== objects in namespace 'demo':"
"$tierfs" object ls "${flags[@]}"
"$tierfs" object rm "${flags[@]}" greeting
"$tierfs" object rm "${flags[@]}" tierfs-binary
