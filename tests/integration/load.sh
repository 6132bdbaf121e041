#!/usr/bin/env bash
# Load on the real stack: 64 readers and 8 writers over the test cluster with every byte checked,
# 10,000 files open at once, a 1,000,000-entry directory listed and statted; the daemon's peak
# RSS is printed next to its memory budget and must stay within it (load.py says how).
# Usage: load.sh TIERFS POPULATE CLUSTER_ENV
# TIERFS_LOAD_SECONDS (default 60) bounds the readers and writers; TIERFS_LOAD_ENTRIES (default
# 1000000) sizes the big directory; TIERFS_LOAD_MEMORY_CHECKS=0 prints the memory figures without
# asserting them (a sanitizer build).
set -euo pipefail
TIERFS=$1
populate=$2
env_file=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
nspace="load-$$"
read -ra flags <<< "$(rados_flags "$env_file" "$nspace")"
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null

# The budget: what the config lets the daemon hold (load.py adds it to the idle footprint).
memory=$((256 << 20)) region=$((16 << 20)) buffers=2 read_ahead=$((64 << 20))
in_flight=$((128 << 20)) dirty=$((64 << 20)) writers=8
cat > "$work/tierfs.toml" << EOF
$(rados_config "$env_file" "$nspace")
[fuse]
attr_timeout = "600s"
entry_timeout = "600s"
[cache]
memory_size = $memory
region_size = $region
buffers = $buffers
[[cache.device]]
path = "$work/cache0"
size = "1G"
[prefetch]
read_ahead_budget = $read_ahead
max_in_flight_bytes = $in_flight
[fs]
dirty_limit = $dirty
EOF
budget=$((memory + buffers * region + read_ahead + in_flight + writers * dirty))

start_tierfs "$mnt" "$work/log" "$work/tierfs.toml"
TIERFS_TEST_CLUSTER_ENV=$env_file python3 "$here/load.py" "$mnt" "$TIERFS_PID" "$budget" \
  "$writers" "$populate" "$nspace"
stop_tierfs "$mnt" "$work/log"
echo "load.sh: passed"
