#!/usr/bin/env bash
# Cache device faults under a real mount over the real cluster, injected below the region cache
# (cache/FaultyDevice.h: the io_uring device wrapped, its faults read from the file that
# TIERFS_TEST_CACHE_FAULTS names, so they switch on and off mid-run): EIO on reads, EIO on
# writes, a full device (writes failing with ENOSPC; the index's filesystem really full; a device
# that cannot be preallocated), many flipped bytes across the cache file's regions. Readers
# always get the right bytes (from the back end when needed); a device that keeps failing is taken
# out of service and reported (device_failed in the cache stats, the tierfs_cache_device_up
# metric, a log line); the mount stays up and serves.
# Usage: cache_faults.sh TIERFS CLUSTER_ENV
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
small=$work/small
trap 'mount_test_cleanup_all' EXIT
mount_test_cleanup_all() {
  cleanup_mount "$mnt"
  mount_test_cleanup_small
  mount_test_cleanup
}
mount_test_cleanup_small() {
  if mountpoint -q "$small" 2> /dev/null; then umount "$small" || umount -l "$small" || true; fi
}
ns="cache-faults-$$"
read -ra flags <<< "$(rados_flags "$2" "$ns")"
export TIERFS_TEST_CACHE_FAULTS=$work/faults
inject() { echo "$*" > "$TIERFS_TEST_CACHE_FAULTS"; }
port=$(free_port)

mkdir -p "$work/src/new"
python3 - "$work/src" << 'PY'
import os, sys
root = sys.argv[1]
os.makedirs(f'{root}/shards')
os.makedirs(f'{root}/images')
for i in range(6):
    open(f'{root}/shards/s{i}', 'wb').write(os.urandom(3 << 20))
for i in range(40):
    open(f'{root}/images/i{i}.jpg', 'wb').write(os.urandom(60_000 + i * 997))
PY
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null
"$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null

# config NAME DEVICE [INDEX_DIR]: a config file with one 256M device of 2M regions, no memory
# tier (every read reaches the device) and metrics on $port.
config() {
  local conf=$work/$1.toml
  {
    rados_config "$clusterenv" "$ns"
    printf '[metrics]\nenabled = true\naddress = "127.0.0.1:%s"\n' "$port"
    printf '[cache]\nmemory_size = "0"\nregion_size = "2M"\n'
    [[ -n ${3:-} ]] && printf 'index_dir = "%s"\n' "$3"
    printf '[[cache.device]]\npath = "%s"\nsize = "256M"\n' "$2"
  } > "$conf"
  echo "$conf"
}
clusterenv=$2
# write_new N: N new files of 1.5 MiB through the mount (and into src, to compare).
written=0
write_new() {
  for _ in $(seq "$1"); do
    written=$((written + 1))
    head -c $((3 << 19)) /dev/urandom > "$work/src/new/w$written"
    cp "$work/src/new/w$written" "$mnt/new/w$written"
  done
}
device_up() { curl -sf "http://127.0.0.1:$port/metrics" | awk '/^tierfs_cache_device_up/ {print $2}'; }
# expect_out_of_service WHAT LOG: stats, metric and log all say the device is out of service.
expect_out_of_service() {
  local s
  s=$(stats)
  [[ $(field "$s" device_failed) == 1 ]] || fail "$1: the device is still in service: $s"
  [[ $(device_up) == 0 ]] || fail "$1: tierfs_cache_device_up is $(device_up), not 0"
  grep -q "times in a row: taken out of service" "$2" || fail "$1: no log line: $(tail "$2")"
}

# --- EIO on reads -------------------------------------------------------------------------
inject ""
start_tierfs "$mnt" "$work/log.reads" "$(config reads "$work/cache-reads")"
mkdir -p "$mnt/new"
read_all "first read"
sleep 2.5  # the open region is sealed 1 s after the last insert
read_all "second read"
s1=$(stats)
(($(field "$s1" device_hits) > 0)) || fail "no device hits before any fault: $s1"
[[ $(device_up) == 1 ]] || fail "tierfs_cache_device_up is $(device_up) before any fault"
inject "read/2"
read_all "every second device read failing"
s2=$(stats)
(($(field "$s2" device_corruptions) > 0)) || fail "no failed read counted: $s2"
[[ $(field "$s2" device_failed) == 0 ]] || fail "failures between successes took the device out: $s2"
inject "read"
read_all "every device read failing"
expect_out_of_service "every read failing" "$work/log.reads"
inject ""
read_all "after the device was taken out of service"
s3=$(stats)
(($(field "$s3" backend_reads) > $(field "$s2" backend_reads))) || fail "not read from the back end: $s3"
echo "reads: ok: $s3"
stop_tierfs "$mnt" "$work/log.reads"
# A restart puts the device back in service; what was not dropped is served from it again.
start_tierfs "$mnt" "$work/log.reads2" "$work/reads.toml"
read_all "after a restart"
s4=$(stats)
[[ $(field "$s4" device_failed) == 0 ]] || fail "the device is out of service after a restart: $s4"
(($(field "$s4" device_hits) > 0)) || fail "no device hits after a restart: $s4"
stop_tierfs "$mnt" "$work/log.reads2"
echo "ok: EIO on reads: right bytes, the device taken out of service, back after a restart"

# --- EIO on writes, and a device out of room (ENOSPC) --------------------------------------
for fault in write full; do
  start_tierfs "$mnt" "$work/log.$fault" "$(config "$fault" "$work/cache-$fault")"
  read_all "before the $fault faults"
  inject "$fault"
  write_new 12  # 24 chunks of 1 MiB: a 2 MiB region each, each seal failing
  read_all "$fault faults"
  sleep 2.5
  read_all "$fault faults, later"
  expect_out_of_service "$fault faults" "$work/log.$fault"
  if [[ $fault == full ]]; then
    grep -q "No space left on device" "$work/log.$fault" || fail "ENOSPC not logged"
  fi
  inject ""
  write_new 2
  read_all "after the $fault faults"
  stop_tierfs "$mnt" "$work/log.$fault"
  echo "ok: $fault faults: right bytes, the device taken out of service, the mount kept serving"
done

# --- The index's filesystem full (a 40 MiB tmpfs) -----------------------------------------
# RocksDB writes the region records into a log it preallocated, so a full filesystem is felt
# only when it switches logs; whether the device is then taken out of service or not, readers
# get the right bytes, the mount keeps serving, and a restart once there is room works.
mkdir "$small"
mount -t tmpfs -o size=40m tmpfs "$small"
start_tierfs "$mnt" "$work/log.index" "$(config index "$work/cache-index" "$small/index")"
read_all "index: first read"
sleep 2.5
dd if=/dev/zero of="$small/filler" bs=1M 2> /dev/null || true  # until ENOSPC
write_new 12
read_all "index filesystem full"
sleep 2.5
write_new 4
read_all "index filesystem full, later"
echo "index filesystem full: $(stats)"
stop_tierfs "$mnt" "$work/log.index"
rm "$small/filler"
start_tierfs "$mnt" "$work/log.index2" "$work/index.toml"
read_all "index: after room was made and a restart"
s=$(stats)
[[ $(field "$s" device_failed) == 0 ]] || fail "the device is out of service after a restart: $s"
(($(field "$s" device_hits) > 0)) || fail "no device hits after a restart: $s"
stop_tierfs "$mnt" "$work/log.index2"
echo "ok: a full index filesystem: right bytes, and the cache serves after a restart"

# A device that cannot be preallocated (256M on the 40 MiB tmpfs) is refused at start, named.
if "$TIERFS" mount -f "$(config nospace "$small/cache")" "$mnt" 2> "$work/err.nospace"; then
  fail "a mount with a device larger than its filesystem started"
fi
grep -q "$small/cache" "$work/err.nospace" || fail "unclear error: $(cat "$work/err.nospace")"
echo "ok: a device that does not fit is refused: $(tail -1 "$work/err.nospace")"
mount_test_cleanup_small

# --- Many flipped bytes across the cache file's regions ------------------------------------
start_tierfs "$mnt" "$work/log.flip" "$(config flip "$work/cache-flip")"
read_all "flip: first read"
sleep 2.5
stop_tierfs "$mnt" "$work/log.flip"
# One byte in the first entry's payload of every region that holds data (regions of 2 MiB).
flipped=$(python3 - "$work/cache-flip" << 'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
region, n = 2 << 20, 0
for start in range(0, os.fstat(fd).st_size, region):
    head = os.pread(fd, 4096, start)
    if head.count(0) == len(head):
        continue
    at = start + 40 + 1000
    b = os.pread(fd, 1, at)
    os.pwrite(fd, bytes([b[0] ^ 0x40]), at)
    n += 1
os.fsync(fd)
print(n)
PY
)
((flipped >= 10)) || fail "only $flipped regions held data"
start_tierfs "$mnt" "$work/log.flip2" "$work/flip.toml"
read_all "after $flipped flipped bytes"
s=$(stats)
corrupt=$(field "$s" device_corruptions)
((corrupt >= 8)) || fail "$flipped flipped bytes, $corrupt corruptions counted: $s"
echo "flipped bytes in $flipped regions: $s"
# At run time too: every third device read returns a flipped byte.
stop_tierfs "$mnt" "$work/log.flip2"
start_tierfs "$mnt" "$work/log.flip3" "$work/flip.toml"
read_all "flip: reread"
inject "flip/3"
read_all "every third device read flipped"
s=$(stats)
(($(field "$s" device_corruptions) > 0)) || fail "flipped reads went unnoticed: $s"
inject ""
stop_tierfs "$mnt" "$work/log.flip3"
echo "ok: flipped bytes: right bytes from the back end, each counted"
echo "cache_faults: all checks passed"
