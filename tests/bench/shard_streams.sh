#!/usr/bin/env bash
# Cold shard streaming through a tierfs mount, and what it costs the daemon: N readers each read
# one shard of SIZE once (fresh daemon, fresh cache device, page cache dropped); prints MiB/s, the
# daemon's CPU seconds and minor page faults per MiB, what it fetched from RADOS and what its cache
# device kept, beside `rados bench seq` of 4 MiB objects in the same run. With --against OTHER
# (another build's tierfs binary) each round runs both binaries, ABBA order, so the ratio of the
# two is read within one run. With --second-pass, the readers stream their shards again in the
# same mount after the page cache is dropped: what the cache kept, and how fast it serves it.
# Usage: tests/bench/shard_streams.sh [--readers N] [--size SIZE] [--rounds N] [--against BIN]
#                                     [--build DIR] [--second-pass]
set -euo pipefail
cd "$(dirname "$0")/../.."
readers=4
size=256M
rounds=3
against=
build=build
second=
while [[ $# -gt 0 ]]; do
  case $1 in
    --readers) readers=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --second-pass) second=1; shift ;;
    *) echo "usage: $0 [--readers N] [--size SIZE] [--rounds N] [--against BIN] [--build DIR]" \
            "[--second-pass]" >&2
       exit 2 ;;
  esac
done
if [[ -n $against && ! -x $against ]]; then
  echo "$0: --against $against: not an executable" >&2
  exit 2
fi

deploy/install-deps.sh > /dev/null
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" --target tierfs > /dev/null
tierfs=$(realpath "$build/tools/tierfs")

# shellcheck source=tests/bench/bench_lib.sh
source tests/bench/bench_lib.sh
bench_cluster tierfs-shards shards
mkdir -p "$work/data"
for ((i = 0; i < readers; i++)); do
  head -c "$size" /dev/urandom > "$work/data/s$i"
done
"$tierfs" mkfs "${flags[@]}" > /dev/null
"$tierfs" import "${flags[@]}" "$work/data" /shards > /dev/null
shard_mib=$(( $(stat -c %s "$work/data/s0") >> 20 ))
rm -rf "$work/data"

stream_all() {  # every reader streams its shard once; waits for them
  local i pids=()
  for ((i = 0; i < readers; i++)); do
    dd if="$mnt/shards/s$i" of=/dev/null bs=1M status=none &
    pids+=($!)
  done
  wait "${pids[@]}"
}

# BINARY -> "MiB/s cpu_s faults_per_mib backend_mib device_entries second_mibs second_backend_mib"
# (the last two "-" without --second-pass)
one_run() {
  local bin=$1 i t0 t1 c0 c1 f0 f1 st t2=0 t3=0 st2='""'
  rm -rf "$work/cache"
  mkdir -p "$work/cache"
  "$bin" mount -f "${flags[@]}" --read-only --cache-device "$work/cache/dev0=$((2 * readers * shard_mib))M" \
    --log "$work/cache/log" "$mnt" &
  daemon=$!
  for ((i = 0; i < 100; i++)); do mountpoint -q "$mnt" && break; sleep 0.1; done
  mountpoint -q "$mnt" || { echo "tierfs did not mount: $(tail -3 "$work/cache/log")" >&2; exit 1; }
  drop_page_cache
  c0=$(( $(proc_field 14 "$daemon") + $(proc_field 15 "$daemon") ))
  f0=$(proc_field 10 "$daemon")
  t0=$(date +%s.%N)
  stream_all
  t1=$(date +%s.%N)
  c1=$(( $(proc_field 14 "$daemon") + $(proc_field 15 "$daemon") ))
  f1=$(proc_field 10 "$daemon")
  st=$("$tierfs" status --json)
  if [[ -n $second ]]; then
    drop_page_cache
    t2=$(date +%s.%N)
    stream_all
    t3=$(date +%s.%N)
    st2=$("$tierfs" status --json)
  fi
  fusermount3 -u "$mnt"
  wait "$daemon"
  daemon=
  python3 - "$t0" "$t1" "$c0" "$c1" "$f0" "$f1" "$((readers * shard_mib))" "$t2" "$t3" "$st" \
    "$st2" <<'EOF'
import json, sys
t0, t1, c0, c1, f0, f1, mib, t2, t3 = map(float, sys.argv[1:10])
def status(text):
    st = json.loads(text)
    return st[0] if isinstance(st, list) else st
st, st2 = status(sys.argv[10]), status(sys.argv[11])
second = "- -"
if st2:
    from_backend = (st2['bytes_from_backend'] - st['bytes_from_backend']) / 2**20
    second = f"{mib / (t3 - t2):.0f} {from_backend:.0f}"
print(f"{mib / (t1 - t0):.0f} {(c1 - c0) / 100:.1f} {(f1 - f0) / mib:.0f} "
      f"{st['bytes_from_backend'] / 2**20:.0f} {st['entries']} {second}")
EOF
}

rados_seq() {
  local r=(rados -c "$TIERFS_CEPH_CONF" -n "$TIERFS_CEPH_USER" -p "$TIERFS_CEPH_POOL")
  "${r[@]}" bench 5 write -t 16 --no-cleanup --run-name seq > /dev/null
  drop_page_cache
  "${r[@]}" bench 5 seq -t 16 --run-name seq | awk '/^Bandwidth \(MB\/sec\)/ {print $3}'
  "${r[@]}" cleanup --run-name seq > /dev/null
}

echo "$readers readers x $shard_mib MiB, cold; $rounds round(s)"
echo "| round | binary | MiB/s | daemon CPU s | page faults / MiB | from RADOS MiB | device entries |" \
  "second pass MiB/s | second pass from RADOS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
for ((r = 1; r <= rounds; r++)); do
  abba_order "$r" "$tierfs" "$against"
  for bin in "${order[@]}"; do
    read -r mibs cpu faults backend entries second_mibs second_backend < <(one_run "$bin")
    label=this
    [[ $bin == "$tierfs" ]] || label=against
    echo "| $r | $label | $mibs | $cpu | $faults | $backend | $entries | $second_mibs |" \
      "$second_backend |"
  done
done
echo "rados bench seq, 4 MiB objects, 16 in flight: $(rados_seq) MiB/s"
