#!/usr/bin/env bash
# `tierfs warm`, `status` and `evict` against a real mount over the real cluster: a warmed tree
# is then read with no byte from the back end; a second warm-up fetches nothing; `status PATH`
# gives the exact cached fraction after a partial warm-up; evict drops a tree; Ctrl-C cancels
# the job in the daemon; a file that cannot be fetched (an injected fault) is named and the exit
# is non-zero; a user who is neither root nor the mount's owner cannot use the control socket;
# the Slurm prolog warms what a job names and the epilog reports its hit ratio; a hinted order
# is read ahead.
# Usage: control_warm.sh TIERFS CLUSTER_ENV
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
mkdir "$work/src"
chmod 755 "$work"
ns="warm-$$"
read -ra flags <<< "$(rados_flags "$2" "$ns")"

# data/a: 20 files of ~150 KB; data/b: 10 files of ~150 KB and one of 6 MiB (6 chunks).
python3 - "$work/src" << 'PY'
import os, sys
root = sys.argv[1]
for sub, n in (('a', 20), ('b', 10)):
    os.makedirs(f'{root}/data/{sub}')
    for i in range(n):
        open(f'{root}/data/{sub}/f{i:02}', 'wb').write(os.urandom(150_000 + 1000 * i))
open(f'{root}/data/b/big', 'wb').write(os.urandom(6 << 20))
PY
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null
"$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null

# config FAULTS...: the daemon's config: the cluster, a cache device, its control socket in
# $work, no dataset sweep, then the [[fault]] tables given.
config() {
  rados_config "$cluster_env" "$ns"
  printf '[cache]\nmemory_size = "0"\n[[cache.device]]\npath = "%s"\nsize = "256M"\n' "$work/cache0"
  printf '[control]\nsocket = "%s"\n' "$work/ctl.sock"
  # No dataset sweep: the hinted epoch below counts its back-end reads exactly.
  printf '[prefetch]\nsweep = false\n'
  local f
  for f in "$@"; do printf '%s\n' "$f"; done
}
cluster_env=$2
# check_tree PATH FILES BYTES CACHED_FILES CACHED_BYTES: `tierfs status --json PATH` says so.
check_tree() {
  python3 - "$("$TIERFS" status --json "$mnt/$1")" "$@" << 'PY'
import json, sys
t = json.loads(sys.argv[1])['tree']
want = dict(zip(('files', 'bytes', 'cached_files', 'cached_bytes'), map(int, sys.argv[3:])))
assert t == want, f'status of {sys.argv[2]} says {t}, want {want}'
print(f"status {sys.argv[2]}: {t['cached_files']}/{t['files']} files, "
      f"{t['cached_bytes']}/{t['bytes']} bytes cached")
PY
}
bytes_of() { find "$work/src/$1" -type f -printf '%s\n' | awk '{n += $1} END {print n}'; }
files_of() { find "$work/src/$1" -type f | wc -l; }
all_files=$(files_of data) all_bytes=$(bytes_of data)
a_files=$(files_of data/a) a_bytes=$(bytes_of data/a)

config > "$work/plain.toml"
start_tierfs "$mnt" "$work/log" "$work/plain.toml"
"$TIERFS" status | grep -q "$mnt" || fail "tierfs status does not list the mount"
[[ -S $work/ctl.sock ]] || fail "no control socket at $work/ctl.sock"
[[ $(stat -c %a "$work/ctl.sock") == 600 ]] || fail "the control socket is not mode 0600"

# Nothing cached yet; then data/a only: the fraction is exact.
check_tree data "$all_files" "$all_bytes" 0 0 || fail "status before any warm-up"
"$TIERFS" warm "$mnt/data/a" > "$work/out" || fail "warm of data/a failed: $(cat "$work/out")"
check_tree data "$all_files" "$all_bytes" "$a_files" "$a_bytes" || fail "status after data/a"

# The rest, then a read of everything moves no byte from the back end.
"$TIERFS" warm "$mnt/data" > "$work/out" || fail "warm of data failed: $(cat "$work/out")"
check_tree data "$all_files" "$all_bytes" "$all_files" "$all_bytes" || fail "status after data"
before=$(stats)
sync
echo 3 > /proc/sys/vm/drop_caches
(cd "$work/src" && find data -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/want"
(cd "$mnt" && find data -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/got"
cmp -s "$work/want" "$work/got" || fail "wrong data after warm-up"
after=$(stats)
[[ $(field "$after" backend_reads) == $(field "$before" backend_reads) ]] ||
  fail "reading a warmed tree reached the back end: $before -> $after"
(($(field "$after" device_hits) > 0)) || fail "no device hits: $after"
# A second warm-up fetches nothing.
last=$("$TIERFS" warm --json "$mnt/data" | tail -1)
[[ $(field "$last" fetched_bytes) == 0 ]] || fail "a second warm-up fetched bytes: $last"
[[ $(field "$last" finished) == True ]] || fail "the last JSON line is not the end: $last"
echo "second warm-up: $last"

# evict drops data/b only.
"$TIERFS" evict "$mnt/data/b" > /dev/null
check_tree data "$all_files" "$all_bytes" "$a_files" "$a_bytes" || fail "status after evict"

# The Slurm prolog warms what a job's comment names (scontrol stands in); the epilog reports the
# job's hit ratio: reading the warmed tree hits the cache only.
"$TIERFS" evict "$mnt/data/a" > /dev/null
mkdir "$work/bin"
printf '#!/bin/sh\necho "JobId=7 JobName=train Comment=tierfs:warm=%s/data/a Partition=gpu"\n' \
  "$mnt" > "$work/bin/scontrol"
chmod +x "$work/bin/scontrol"
slurm_env=(env PATH="$work/bin:$PATH" SLURM_JOB_ID=7 TIERFS_BIN="$TIERFS" TIERFS_JOB_STATE="$work/jobs")
"${slurm_env[@]}" "$here/../../deploy/slurm/prolog.sh" 2> "$work/prolog.err" ||
  fail "the prolog failed: $(cat "$work/prolog.err")"
grep -q "job 7: warmed $mnt/data/a" "$work/prolog.err" || fail "prolog: $(cat "$work/prolog.err")"
check_tree data "$all_files" "$all_bytes" "$a_files" "$a_bytes" || fail "status after the prolog"
sync
echo 3 > /proc/sys/vm/drop_caches
cat "$mnt"/data/a/* > /dev/null
"${slurm_env[@]}" "$here/../../deploy/slurm/epilog.sh" 2> "$work/epilog.err" ||
  fail "the epilog failed: $(cat "$work/epilog.err")"
grep -q "job 7: $mnt: hit ratio 100.0% ([1-9][0-9]* hits, 0 misses" "$work/epilog.err" ||
  fail "epilog: $(cat "$work/epilog.err")"
cat "$work/epilog.err"

# Hinted prefetch: the reader announces a shuffled order of data/a and reads in it; the daemon
# reads ahead (every chunk fetched once), and `tierfs hint` ends when the reader reaches the end.
"$TIERFS" evict "$mnt/data/a" > /dev/null
(cd "$mnt" && ls data/a/* | shuf --random-source=<(yes)) > "$work/order"
before=$(stats)
status_before=$("$TIERFS" status --json "$mnt")
grew() { echo $(($(field "$1" "$2") - $(field "$status_before" "$2"))); }  # grew STATUS KEY
"$TIERFS" hint --distance 4 --from "$work/order" "$mnt" > "$work/hint.out" 2>&1 &
hint_pid=$!
# The hint fetches its distance ahead before the reader's first file.
for ((i = 0; i < 300; i++)); do
  ahead=$(grew "$("$TIERFS" status --json "$mnt")" prefetched)
  ((ahead >= 4)) && break
  sleep 0.1
done
((ahead >= 4)) || fail "the hint fetched $ahead files ahead in 30 s, not its distance (4)"
sync
echo 3 > /proc/sys/vm/drop_caches
while read -r f; do cat "$mnt/$f" > /dev/null; done < "$work/order"
wait "$hint_pid" || fail "tierfs hint failed: $(cat "$work/hint.out")"
after=$(stats)
grep -q "the reader reached $a_files of $a_files files" "$work/hint.out" ||
  fail "hint: $(cat "$work/hint.out")"
fetched=$(($(field "$after" backend_reads) - $(field "$before" backend_reads)))
# Each file is one chunk, fetched once: ahead of the reader, or joined by it.
((fetched == a_files)) || fail "the hinted epoch fetched $fetched chunks for $a_files files"
# status: every chunk fetched ahead was then read (prefetch accuracy 100%). How many were ahead
# depends on timing beyond the first four: a reader faster than the hint (under TSan, say) fetches
# a file itself, and the hint's warm-up then joins its fetch.
status_after=$("$TIERFS" status --json "$mnt")
ahead=$(grew "$status_after" prefetched)
used=$(grew "$status_after" prefetch_used)
((ahead >= 4 && ahead <= a_files)) || fail "$ahead of $a_files files were fetched ahead"
((used == ahead)) || fail "$used of the $ahead chunks fetched ahead were read"
"$TIERFS" status | grep -A4 "^$mnt (" | grep -q 'prefetch accuracy: 100.0%' ||
  fail "status: $("$TIERFS" status)"
echo "hinted epoch: $(cat "$work/hint.out"); $fetched back-end reads, $ahead ahead of the reader"

# A user who is neither root nor the owner cannot reach the socket.
as_nobody=(setpriv --reuid 65534 --regid 65534 --clear-groups)
if "${as_nobody[@]}" "$TIERFS" status "$mnt" > /dev/null 2> "$work/err"; then
  fail "uid 65534 could ask for the status"
fi
if "${as_nobody[@]}" python3 -c "
import socket, sys
socket.socket(socket.AF_UNIX).connect(sys.argv[1])" "$work/ctl.sock" 2> "$work/err"; then
  fail "uid 65534 could connect to the control socket"
fi
grep -q 'Permission denied' "$work/err" || fail "unexpected refusal: $(cat "$work/err")"
bad_ino=$(stat -c %i "$mnt/data/b/f03")
stop_tierfs "$mnt" "$work/log"

# Ctrl-C: every chunk read takes 100 ms; the warm-up of data/b (16 chunks, one at a time) is
# interrupted after ~0.6 s, and the daemon stops the job.
config '[[fault]]' 'op = "read"' 'object_prefix = "c."' 'action = "delay"' 'delay = "100ms"' \
  > "$work/slow.toml"
start_tierfs "$mnt" "$work/log2" "$work/slow.toml"
"$TIERFS" warm --parallel 1 "$mnt/data/b" > /dev/null 2>&1 &
warm_pid=$!
sleep 0.6
kill -INT "$warm_pid"
if wait "$warm_pid"; then fail "an interrupted warm-up exited 0"; fi
for _ in $(seq 50); do
  [[ $(field "$("$TIERFS" status --json "$mnt")" warm_jobs) == 0 ]] && break
  sleep 0.1
done
[[ $(field "$("$TIERFS" status --json "$mnt")" warm_jobs) == 0 ]] || fail "the warm-up still runs"
grep -q 'warm-up ended: Cancelled' "$work/log2" || fail "the daemon did not cancel: $(cat "$work/log2")"
python3 - "$("$TIERFS" status --json "$mnt/data/b")" << 'PY' || fail "Ctrl-C did not stop the warm-up"
import json, sys
t = json.loads(sys.argv[1])['tree']
assert t['cached_bytes'] < t['bytes'], t
print(f"after Ctrl-C: {t['cached_bytes']} of {t['bytes']} bytes of data/b cached")
PY
stop_tierfs "$mnt" "$work/log2"

# A file whose chunks cannot be read is named, and the exit is non-zero.
config '[[fault]]' 'op = "read"' "object_prefix = \"c.$(printf %x "$bad_ino").\"" \
  'action = "fail"' > "$work/faulty.toml"
start_tierfs "$mnt" "$work/log3" "$work/faulty.toml"
if "$TIERFS" warm "$mnt/data/b" > "$work/out" 2> "$work/err"; then
  fail "a warm-up with an unreadable file exited 0"
fi
grep -q "data/b/f03: IoError" "$work/err" || fail "the failed file is not named: $(cat "$work/err")"
echo "warm-up with a failing file: $(head -2 "$work/err" | tr '\n' ' ')"
stop_tierfs "$mnt" "$work/log3"
[[ ! -e $work/ctl.sock ]] || fail "the control socket was left behind"
echo "control warm: OK"
