#!/usr/bin/env bash
# RadosStore against `rados bench`, side by side in one run on one fresh local cluster: 4 MiB and
# 128 KiB objects at 1, 16 and 64 requests in flight, write then random read, each phase for
# --seconds. Runs go in ABBA order (rados, tierfs, tierfs, rados; --pairs N repeats that) and
# are averaged, so that a drift of the cluster weighs on both alike. Prints a Markdown table
# with the ratio tierfs / rados bench.
#   --memstore   OSD on memstore: no device noise, so the clients' own costs show (default)
#   --bluestore  OSD on BlueStore over a sparse file: the OSD does real disk I/O
# Usage: tests/bench/rados_compare.sh [--seconds N] [--pairs N] [--memstore|--bluestore]
#                                     [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=5
pairs=1
store=--memstore
build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --memstore|--bluestore) store=$1; shift ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds N] [--pairs N] [--memstore|--bluestore] [--build DIR]" >&2
       exit 2 ;;
  esac
done

deploy/install-deps.sh > /dev/null
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" --target tierfs > /dev/null
tierfs=$build/tools/tierfs

cluster=$(mktemp -d /tmp/tierfs-bench-XXXXXX)
trap 'deploy/dev-cluster/stop.sh --purge "$cluster" > /dev/null' EXIT
if [[ $store == --bluestore ]]; then
  deploy/dev-cluster/start.sh --bluestore "$cluster" > /dev/null
else
  deploy/dev-cluster/start.sh "$cluster" > /dev/null
fi
# shellcheck disable=SC1091
source "$cluster/client.env"
rados=(rados -c "$TIERFS_CEPH_CONF" -n "$TIERFS_CEPH_USER" -p "$TIERFS_CEPH_POOL")
tierfs_flags=(--backend rados --conf "$TIERFS_CEPH_CONF" --keyring "$TIERFS_CEPH_KEYRING"
              --user "$TIERFS_CEPH_USER" --pool "$TIERFS_CEPH_POOL" --in-flight 64)

# Bandwidth in MiB/s from rados bench's summary ("Bandwidth (MB/sec):", where MB is 2^20 bytes).
rados_bench() {  # SIZE THREADS -> "write_mib rand_mib"
  local name=cmp-$1-$2 w r
  w=$("${rados[@]}" bench "$seconds" write -b "$1" -t "$2" --no-cleanup --run-name "$name" |
      awk '/^Bandwidth \(MB\/sec\)/ {print $3}')
  r=$("${rados[@]}" bench "$seconds" rand -t "$2" --no-verify --run-name "$name" |
      awk '/^Bandwidth \(MB\/sec\)/ {print $3}')
  "${rados[@]}" cleanup --run-name "$name" > /dev/null
  echo "$w $r"
}

tierfs_bench() {  # SIZE THREADS -> "write_mib rand_mib"
  "$tierfs" bench store "${tierfs_flags[@]}" --size "$1" -t "$2" --seconds "$seconds" --json |
    sed -n 's/.*"mib_per_s":\([0-9.]*\).*/\1/p' | paste -sd' '
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
mean() { tr ' ' '\n' <<< "$*" | awk '{ s += $1; n++ } END { printf "%.1f", s / n }'; }
cell() { echo "$(mean "$@") ($(printf '%.0f/' "$@" | sed 's|/$||'))"; }

echo "OSD: ${store#--}, ${seconds} s per phase; MiB/s, mean of $((2 * pairs)) runs (each run in parentheses)"
echo "| object | in flight | write rados bench | write tierfs | ratio | rand read rados bench | rand read tierfs | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for size in 4M 128K; do
  for threads in 1 16 64; do
    rw=() rr=() tw=() tr=()
    for ((p = 0; p < pairs; p++)); do
      read -r a b <<< "$(rados_bench "$size" "$threads")"; rw+=("$a"); rr+=("$b")
      read -r a b <<< "$(tierfs_bench "$size" "$threads")"; tw+=("$a"); tr+=("$b")
      read -r a b <<< "$(tierfs_bench "$size" "$threads")"; tw+=("$a"); tr+=("$b")
      read -r a b <<< "$(rados_bench "$size" "$threads")"; rw+=("$a"); rr+=("$b")
    done
    echo "| $size | $threads | $(cell "${rw[@]}") | $(cell "${tw[@]}") |" \
         "$(ratio "$(mean "${tw[@]}")" "$(mean "${rw[@]}")") |" \
         "$(cell "${rr[@]}") | $(cell "${tr[@]}") | $(ratio "$(mean "${tr[@]}")" "$(mean "${rr[@]}")") |"
  done
done
