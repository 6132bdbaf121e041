#!/usr/bin/env bash
# The POSIX suite and the model-based test against a real tierfs mount.
# Usage: posix_mount.sh TIERFS dir|rados [CLUSTER_ENV]
set -euo pipefail
TIERFS=$1
backend=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"

work=$(mktemp -d)
chmod 755 "$work"  # the suite's other-user checks must reach the mount point
mnt=$work/mnt
mkdir "$mnt"
trap 'cleanup_mount "$mnt"; if mountpoint -q "$work/store"; then umount "$work/store"; fi; rm -rf "$work"' EXIT

if [[ $backend == rados ]]; then
  read -ra flags <<< "$(rados_flags "$3" "posix-$$")"
else
  # The store on a tmpfs: the same DirStore code, without the disk's fsync latency, which made
  # this the suite's longest test (every dentry update is synced).
  mkdir "$work/store"
  mount -t tmpfs -o size=6g tierfs-posix-store "$work/store"
  flags=(--backend dir --path "$work/store")
fi
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M
start_tierfs "$mnt" "$work/log" "${flags[@]}" --allow-other
python3 "$here/posix/posix_suite.py" --mount "$mnt" --tierfs --other-users \
  --big-size "${TIERFS_BIG_SIZE:-2G}"
for seed in 1 2 3; do
  mkdir "$mnt/model-$seed"
  python3 "$here/posix/model_test.py" --mount "$mnt/model-$seed" --tierfs --seed "$seed" \
    --ops 2000
done
stop_tierfs "$mnt" "$work/log"
echo "posix_mount.sh ($backend): passed"
