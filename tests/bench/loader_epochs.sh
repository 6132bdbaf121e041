#!/usr/bin/env bash
# Shuffled DataLoader epochs over a tree of small files through a tierfs mount, and what they cost
# the daemon: per round a fresh daemon with an empty cache device reads the tree once cold (page
# and cluster caches dropped), then once more from its cache device (page cache dropped). Prints
# files/s, p50 and p99, the daemon's CPU seconds, what it fetched from RADOS (the tree's own size
# when every chunk is fetched once) and how many chunks sweeps fetched ahead of the readers and
# how many of those a reader then used. With --against OTHER (another build's tierfs binary) each
# round runs both binaries, ABBA order, so their ratio is read within one run; --sweep off|on|both
# chooses the dataset sweep's setting ([prefetch] sweep; both: each binary with it off, then on).
# Usage: tests/bench/loader_epochs.sh [--files N] [--readers N] [--rounds N] [--against BIN]
#                                     [--sweep off|on|both] [--cache-memory SIZE] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
files=4000
readers=8
rounds=2
against=
sweeps=(on)
memory=
build=build
usage="usage: $0 [--files N] [--readers N] [--rounds N] [--against BIN] [--sweep off|on|both]"
usage+=" [--cache-memory SIZE] [--build DIR]"
while [[ $# -gt 0 ]]; do
  case $1 in
    --files) files=$2; shift 2 ;;
    --readers) readers=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    --sweep)
      case $2 in
        off | on) sweeps=("$2") ;;
        both) sweeps=(off on) ;;
        *) echo "$0: --sweep $2: off, on or both" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --cache-memory) memory=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
if [[ -n $against && ! -x $against ]]; then
  echo "$0: --against $against: not an executable" >&2
  exit 2
fi

deploy/install-deps.sh --bench > /dev/null
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" --target tierfs bench_loader > /dev/null
tierfs=$(realpath "$build/tools/tierfs")
loader=$(realpath "$build/tests/bench/bench_loader")

# shellcheck source=tests/bench/bench_lib.sh
source tests/bench/bench_lib.sh
# shellcheck source=tests/integration/mount_lib.sh
source tests/integration/mount_lib.sh  # rados_config
bench_cluster tierfs-loader loader
mkdir -p "$work/data"
# Debian's python3: the one apt installed python3-xxhash for.
/usr/bin/python3 -c 'import sys; sys.path.insert(0, "tests/bench"); import dataset
dataset.make_images(sys.argv[1], "small", dataset.image_sizes(int(sys.argv[2])))' \
  "$work/data" "$files"
"$tierfs" mkfs "${flags[@]}" > /dev/null
"$tierfs" import "${flags[@]}" "$work/data/small" /small > /dev/null
tree_mib=$(( $(awk '{s += $2} END {print s}' "$work/data/small.manifest") >> 20 ))
for s in off on; do  # whole configs (older builds want the back end in the file)
  {
    rados_config "$work/cluster/client.env" loader
    printf '[prefetch]\nsweep = %s\n' "$([[ $s == on ]] && echo true || echo false)"
  } > "$work/sweep-$s.toml"
done

epoch() {  # SEED -> bench_loader's JSON line
  "$loader" --root "$mnt" --manifest "$work/data/small.manifest" --readers "$readers" \
    --order shuffled --seed "$1" | tail -1
}

# BINARY SWEEP -> "cold_files/s p50 p99 cpu_s backend_mib prefetched used warm_files/s warm_p99"
one_run() {
  local bin=$1 sweep=$2 i c0 c1 cold warm st
  rm -rf "$work/cache"
  mkdir -p "$work/cache"
  "$bin" mount -f --config "$work/sweep-$sweep.toml" --read-only \
    --cache-device "$work/cache/dev0=$((4 * tree_mib + 256))M" ${memory:+--cache-memory "$memory"} \
    --log "$work/cache/log" "$mnt" &
  daemon=$!
  for ((i = 0; i < 100; i++)); do mountpoint -q "$mnt" && break; sleep 0.1; done
  mountpoint -q "$mnt" || { echo "tierfs did not mount: $(tail -3 "$work/cache/log")" >&2; exit 1; }
  drop_page_cache
  ceph -c "$TIERFS_CEPH_CONF" -k "$TIERFS_CEPH_ADMIN_KEYRING" tell 'osd.*' cache drop \
    > /dev/null 2>&1 || true
  c0=$(( $(proc_field 14 "$daemon") + $(proc_field 15 "$daemon") ))
  cold=$(epoch 1)
  c1=$(( $(proc_field 14 "$daemon") + $(proc_field 15 "$daemon") ))
  st=$("$tierfs" status --json)
  drop_page_cache
  warm=$(epoch 2)
  fusermount3 -u "$mnt"
  wait "$daemon"
  daemon=
  python3 - "$c0" "$c1" "$cold" "$warm" "$st" <<'EOF'
import json, sys
c0, c1 = map(float, sys.argv[1:3])
cold, warm, st = (json.loads(a) for a in sys.argv[3:6])
st = st[0] if isinstance(st, list) else st
if cold['bad'] or warm['bad']:
    sys.exit(f"files read wrong: {cold['bad']} cold, {warm['bad']} warm")
print(f"{cold['files_per_s']:.0f} {cold['p50_ms']:.1f} {cold['p99_ms']:.1f} {(c1 - c0) / 100:.1f} "
      f"{st['bytes_from_backend'] / 2**20:.0f} {st['prefetched']} {st['prefetch_used']} "
      f"{warm['files_per_s']:.0f} {warm['p99_ms']:.1f}")
EOF
}

echo "$files files ($tree_mib MiB), $readers readers, shuffled; $rounds round(s)"
echo "| round | binary | sweep | cold files/s | cold p50 ms | cold p99 ms | daemon CPU s (cold) |" \
  "from RADOS MiB | swept chunks | of them used | device-warm files/s | device-warm p99 ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for ((r = 1; r <= rounds; r++)); do
  abba_order "$r" "$tierfs" "$against"
  for bin in "${order[@]}"; do
    label=this
    [[ $bin == "$tierfs" ]] || label=against
    for sweep in "${sweeps[@]}"; do
      read -r cold p50 p99 cpu backend swept used warm warm99 < <(one_run "$bin" "$sweep")
      echo "| $r | $label | $sweep | $cold | $p50 | $p99 | $cpu | $backend | $swept | $used |" \
        "$warm | $warm99 |"
    done
  done
done
