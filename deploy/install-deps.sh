#!/usr/bin/env bash
# Installs everything tierfs needs to build, test and run a local Ceph cluster, from Debian's
# archive; with --bench also the peers tests/bench/compare.sh measures tierfs against. Idempotent: installs only what is missing, and runs `apt-get update` only when a
# package cannot be found in the current lists. Run as root (or through sudo).
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config
  # libraries
  libfuse3-dev fuse3 librados-dev libradospp-dev liburing-dev librocksdb-dev libzstd-dev
  libxxhash-dev libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libexpected-dev
  prometheus-cpp-dev libabsl-dev libsystemd-dev libgoogle-perftools-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev git tar util-linux systemd
  prometheus
  # the local cluster (deploy/dev-cluster)
  ceph-mon ceph-osd ceph-mgr ceph-mds ceph-fuse ceph-common uuid-runtime python3 procps
  # fuzzing (tests/fuzz, docs/FUZZING.md): libFuzzer and the sanitizers' runtimes
  clang libclang-rt-14-dev
)
if [[ ${1:-} == --bench ]]; then
  # tests/bench/compare.sh: the S3 gateway, the S3 filesystems, the readers' hash, the chart
  packages+=(radosgw s3fs rclone curl python3-xxhash python3-matplotlib)
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--bench]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  sudo=(sudo)
else
  sudo=()
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
# A fresh machine may have no package lists, or stale ones: update and retry once.
if ! "${sudo[@]}" apt-get install -y -q "${missing[@]}"; then
  echo "install-deps: a package was not found; running apt-get update"
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q "${missing[@]}"
fi
