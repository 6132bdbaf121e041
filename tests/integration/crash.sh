#!/usr/bin/env bash
# kill -9 of the daemon in the middle of a large rewrite: after a remount the file has its old
# content (never a mix), and data acknowledged by fsync survives although never closed.
# Then kill -9 between the two directory updates of a cross-directory rename (the source
# directory's update held by an injected hang): the restarted daemon finishes the rename at once
# (its predecessor is dead), so the file is never seen under both names, and fsck is clean.
# Usage: crash.sh TIERFS CLUSTER_ENV
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
writer=
trap '[[ -n $writer ]] && kill "$writer" 2> /dev/null; mount_test_cleanup' EXIT
read -ra flags <<< "$(rados_flags "$2" "crash-$$")"
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M

start_tierfs "$mnt" "$work/log" "${flags[@]}"
python3 -c "
import sys
with open(sys.argv[1] + '/old.bin', 'wb') as f:
    f.write(b'A' * (64 << 20))
" "$mnt"

# The writer: fsyncs one file (kept open), then rewrites old.bin and says when it is half-way.
python3 - "$mnt" "$work/midway" <<'PY' &
import os, sys
mnt, midway = sys.argv[1], sys.argv[2]
fd = os.open(f'{mnt}/synced.bin', os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'S' * (8 << 20) + b'tail')
os.fsync(fd)
out = os.open(f'{mnt}/old.bin', os.O_WRONLY | os.O_TRUNC)
block = os.urandom(1 << 20)  # incompressible: the uploads take real time
try:
    for i in range(512):
        os.write(out, block)
        if i == 100:
            open(midway, 'w').close()
except OSError:
    pass  # the daemon is gone
PY
writer=$!
for _ in $(seq 600); do [[ -e $work/midway ]] && break; sleep 0.1; done
[[ -e $work/midway ]] || fail "the writer did not get half-way"
kill -9 "$TIERFS_PID"
wait "$TIERFS_PID" 2> /dev/null || true
wait "$writer" 2> /dev/null || true
writer=
umount -l "$mnt" 2> /dev/null || fusermount3 -u "$mnt" 2> /dev/null || true

start_tierfs "$mnt" "$work/log2" "${flags[@]}"
python3 - "$mnt" <<'PY'
import sys
mnt = sys.argv[1]
data = open(f'{mnt}/old.bin', 'rb').read()
if data != b'A' * (64 << 20):
    values = sorted(set(data))
    sys.exit(f'FAIL: old.bin after the crash: {len(data)} bytes of {values[:4]}, '
             'not its old 64 MiB of A')
synced = open(f'{mnt}/synced.bin', 'rb').read()
if synced != b'S' * (8 << 20) + b'tail':
    sys.exit(f'FAIL: fsynced synced.bin lost: {len(synced)} bytes')
print('crash: old content intact, fsynced data kept')
PY
mkdir "$mnt/src" "$mnt/dst"
head -c 3000000 /dev/urandom > "$work/moved"
cp "$work/moved" "$mnt/src/f"
src_object=$(printf 'd.%x' "$(stat -c %i "$mnt/src")")
stop_tierfs "$mnt" "$work/log2"

# The rename's last step, the removal from src, hangs (the call's deadline is far off).
{
  rados_config "$2" "crash-$$" | sed 's/^\[backend\]$/&\ntimeout = "120s"/'
  printf '[[fault]]\nop = "mutate"\nobject_prefix = "%s"\naction = "hang"\n' "$src_object"
} > "$work/hang.toml"
"$TIERFS" config check "$work/hang.toml" > /dev/null
start_tierfs "$mnt" "$work/log3" "$work/hang.toml"
mv "$mnt/src/f" "$mnt/dst/g" 2> /dev/null &
mover=$!
sleep 2
kill -0 "$mover" 2> /dev/null || fail "the rename did not wait at the source directory's update"
kill -9 "$TIERFS_PID"
wait "$TIERFS_PID" 2> /dev/null || true
wait "$mover" 2> /dev/null || true
umount -l "$mnt" 2> /dev/null || fusermount3 -u "$mnt" 2> /dev/null || true

start_tierfs "$mnt" "$work/log4" "${flags[@]}"
grep -q "roll-forward.*is gone" "$work/log4" ||
  fail "the restarted daemon did not finish its dead predecessor's rename: $(cat "$work/log4")"
[[ ! -e $mnt/src/f ]] || fail "src/f still there after the restart: the file has two names"
cmp "$work/moved" "$mnt/dst/g" || fail "dst/g differs from what was written"
stop_tierfs "$mnt" "$work/log4"
"$TIERFS" fsck "${flags[@]}" > "$work/fsck" 2>&1 || fail "fsck after the rename crash: $(cat "$work/fsck")"
echo "crash: a rename killed half-way was finished by the restarted daemon at once; fsck clean"
echo "crash.sh: passed"
