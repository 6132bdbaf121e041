#!/usr/bin/env bash
# Two daemons mount one volume on the test cluster (separate state, as on two nodes).
# Usage: two_mounts.sh TIERFS CLUSTER_ENV
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
work=$(mktemp -d)
mkdir "$work/a" "$work/b"
pid_a= pid_b=
cleanup() {
  TIERFS_PID=$pid_a cleanup_mount "$work/a"
  TIERFS_PID=$pid_b cleanup_mount "$work/b"
  rm -rf "$work"
}
trap cleanup EXIT
read -ra flags <<< "$(rados_flags "$2" "two-$$")"
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M
timeouts=(--attr-timeout 200ms --entry-timeout 200ms)
start_tierfs "$work/a" "$work/log.a" "${flags[@]}" "${timeouts[@]}"
pid_a=$TIERFS_PID
start_tierfs "$work/b" "$work/log.b" "${flags[@]}" "${timeouts[@]}"
pid_b=$TIERFS_PID
python3 "$here/two_mounts.py" "$work/a" "$work/b" 0.2
TIERFS_PID=$pid_a stop_tierfs "$work/a" "$work/log.a"
pid_a=
TIERFS_PID=$pid_b stop_tierfs "$work/b" "$work/log.b"
pid_b=
echo "two_mounts.sh: passed"
