#!/usr/bin/env bash
# tierfs against ceph-fuse, s3fs, rclone mount and the limits (ext4, a passthrough FUSE
# filesystem, rados bench) on one local Ceph cluster: installs what it needs (apt), builds
# tierfs and the readers (in build/, or $TIERFS_BENCH_BUILD), makes the dataset once (under
# /var/tmp), runs every workload on every system and writes results.json, results.md and
# chart.png to --out (default bench-results/). docs/BENCHMARKS.md explains the figures.
#
# Usage: tests/bench/compare.sh [--quick] [compare.py options, see --help]
#   --quick   small sizes, one round: under 10 minutes on 2 cores (the full run: under an hour)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${TIERFS_BENCH_BUILD:-build}

deploy/install-deps.sh --bench > /dev/null
cmake -S . -B "$build" -G Ninja > /dev/null  # RelWithDebInfo (-O2) unless set
cmake --build "$build" --target tierfs passthrough_fs bench_loader > /dev/null
# Debian's python3: the one apt installed python3-xxhash and python3-matplotlib for.
exec /usr/bin/python3 tests/bench/compare.py --build "$build" "$@"
