#!/usr/bin/env bash
# The cache device under a real mount over the real cluster: a tree read twice moves no bytes
# from the back end the second time; after kill -9 and a restart the third read is still served
# from the device, and its directory listings from the cache index; a flipped byte in the cache
# file is a counted miss, never wrong data; the cache file and its index never occupy more than
# the configured size.
# Usage: cache_mount.sh TIERFS CLUSTER_ENV
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
mkdir "$work/src"
read -ra flags <<< "$(rados_flags "$2" "cache-$$")"
limit=$((256 << 20))
# --cache-device last, just before the mount point: it takes one value per flag (it once
# swallowed the mount point that followed it).
cache=(--cache-memory 0 --cache-device "$work/cache0=256M")

# 8 files of 3 MiB (3 chunks of 1 MiB each), 30 of ~100 KB, one compressible file.
python3 - "$work/src" <<'PY'
import os, sys
root = sys.argv[1]
os.makedirs(f'{root}/shards')
os.makedirs(f'{root}/images')
for i in range(8):
    open(f'{root}/shards/s{i}', 'wb').write(os.urandom(3 << 20))
for i in range(30):
    open(f'{root}/images/i{i}.jpg', 'wb').write(os.urandom(100_000 + i * 997))
open(f'{root}/labels.txt', 'w').write('label 1234\n' * 200_000)
PY
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null
"$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null

check_size() {
  local file index
  file=$(stat -c %s "$work/cache0")
  index=$(du -sb "$work/cache0.index" | cut -f1)
  ((file + index <= limit)) || fail "$1: cache file $file + index $index bytes > $limit"
  echo "$1: cache file $file + index $index bytes (limit $limit)"
}

start_tierfs "$mnt" "$work/log" "${flags[@]}" "${cache[@]}"
check_size "after mount"
read_all "first read"
first=$(stats)
(($(field "$first" backend_reads) > 0)) || fail "the first read fetched nothing: $first"
read_all "second read"
second=$(stats)
[[ $(field "$second" backend_reads) == $(field "$first" backend_reads) ]] ||
  fail "the second read reached the back end: $first -> $second"
(($(field "$second" device_hits) > 0)) || fail "no device hits: $second"
echo "second read: $second"
check_size "after two reads"

# A partly filled region is sealed after 1 s without inserts; then kill -9.
sleep 3
kill -9 "$TIERFS_PID"
wait "$TIERFS_PID" 2> /dev/null || true
TIERFS_PID=
umount -l "$mnt" 2> /dev/null || fusermount3 -u "$mnt" 2> /dev/null || true
start_tierfs "$mnt" "$work/log2" "${flags[@]}" "${cache[@]}"
read_all "third read, after kill -9"
third=$(stats)
[[ $(field "$third" backend_reads) == 0 ]] || fail "after the restart the read reached the back end: $third"
(($(field "$third" device_hits) > 0)) || fail "no device hits after the restart: $third"
# find lists every directory: each listing comes from the cache index, kept across the kill.
(($(field "$third" listing_hits) >= 3)) || fail "no directory listing served from the cache: $third"
[[ $(field "$third" listing_misses) == 0 ]] || fail "a directory was listed from the back end: $third"
echo "third read: $third"
check_size "after the restart"
stop_tierfs "$mnt" "$work/log2"

# A flipped byte inside the first entry (after the first 4 KiB block's 40-byte header): the
# read still returns the right bytes, fetched again, and the event is counted.
python3 - "$work/cache0" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
block = bytearray(os.pread(fd, 4096, 4096))
block[100] ^= 0x40
os.pwrite(fd, bytes(block), 4096)
os.fsync(fd)
os.close(fd)
PY
# This time the cache comes from the config file.
rados_config "$2" "cache-$$" > "$work/tierfs.toml"
cat >> "$work/tierfs.toml" <<EOF
[cache]
memory_size = "0"
eviction = "training"
[[cache.device]]
path = "$work/cache0"
size = "256M"
EOF
start_tierfs "$mnt" "$work/log3" "$work/tierfs.toml"
read_all "read after a flipped byte"
fourth=$(stats)
(($(field "$fourth" device_corruptions) >= 1)) || fail "the flipped byte went unnoticed: $fourth"
(($(field "$fourth" backend_reads) >= 1)) || fail "the damaged entry was not fetched again: $fourth"
echo "after the flipped byte: $fourth"
check_size "at the end"
stop_tierfs "$mnt" "$work/log3"

# A wrong [cache] key is named, and nothing is mounted.
sed 's/^eviction = .*/eviction = "lfu"/' "$work/tierfs.toml" > "$work/bad.toml"
if "$TIERFS" mount -f "$work/bad.toml" "$mnt" 2> "$work/err"; then
  fail "a mount with eviction = lfu started"
fi
grep -q 'eviction must be "fifo", "lru" or "training", not "lfu"' "$work/err" ||
  fail "unclear error for a bad eviction policy: $(cat "$work/err")"
sed 's|^path = .*|path = "relative"|' "$work/tierfs.toml" > "$work/bad.toml"
if "$TIERFS" mount -f "$work/bad.toml" "$mnt" 2> "$work/err"; then
  fail "a mount with a relative cache device path started"
fi
grep -q "absolute path" "$work/err" || fail "unclear error for a relative device: $(cat "$work/err")"
echo "cache mount: OK"
