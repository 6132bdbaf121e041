#!/usr/bin/env bash
# Security of a tierfs node, on a dir back end (no Ceph):
# - the cache device file, its RocksDB index and the control socket are private to the daemon's
#   user whatever the umask (0600, 0700, 0600), and a device file or index left open is closed;
# - with allow_other, POSIX permissions hold through the mount: another user cannot read a 0600
#   file, its owner can; without allow_other, other users cannot enter the mount at all;
# - only root and the mount's owner may use the control socket, unless [control] allow_users or
#   allow_groups name more (then the socket is 0666 and the credentials decide);
# - hostile paths given to warm/evict/status (outside the mount, .. escapes, a symlink out,
#   names over NAME_MAX, control characters and invalid UTF-8, empty) are clear errors, printed
#   escaped, exit 1 (2 for an empty path), warm and evict nothing, and the daemon stays up;
# - a keyring other users may read is refused by every command that would open the rados back
#   end, with the way out named; --allow-open-keyring lets it through; the key is never printed.
# With CLUSTER_ENV (the test cluster): a daemon at log level trace over the real cluster, and
# `mount -d`, never write the cephx key to their logs.
# Usage: security.sh TIERFS [CLUSTER_ENV]
set -euo pipefail
TIERFS=$(realpath "$1")
cluster_env=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
chmod 755 "$work"  # other users must reach the mount point
unset TIERFS_CONFIG
owner=1000 other=1001 grouped=1002 group=3003
as() {  # as UID [GROUPS] -- COMMAND...: runs COMMAND as UID (gid UID) with those groups only
  local uid=$1 groups=$2
  shift 3
  if [[ -n $groups ]]; then
    setpriv --reuid "$uid" --regid "$uid" --groups "$groups" "$@"
  else
    setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"
  fi
}
# Runs tierfs with the arguments, as the caller; sets rc, leaves the output in $work/out, err.
run() {
  set +e
  "$@" > "$work/out" 2> "$work/err"
  rc=$?
  set -e
}
expect_rc() { [[ $rc == "$1" ]] || fail "$2: exit $rc, wanted $1: $(cat "$work/out" "$work/err")"; }
expect_err() { grep -Eq -- "$1" "$work/err" || fail "$2: no /$1/ in: $(cat "$work/err")"; }
mode() { stat -c %a "$1"; }
alive() {
  kill -0 "$TIERFS_PID" 2> /dev/null && mountpoint -q "$mnt" || fail "the daemon is gone: $1"
}
cached_files() {  # cached_files DIR: how many files of $mnt/DIR the cache holds
  python3 -c "import json,sys; print(json.loads(sys.argv[1])['tree']['cached_files'])" \
    "$("$TIERFS" status --json "$mnt/$1")"
}

# config EXTRA: a dir back end, a 64 MiB cache device, the socket in $work, then EXTRA.
config() {
  printf '[backend]\ntype = "dir"\n[backend.dir]\npath = "%s"\n' "$work/store"
  printf '[[cache.device]]\npath = "%s"\nsize = "64M"\n' "$work/cache0"
  printf '[control]\nsocket = "%s"\n%s\n' "$work/ctl.sock" "${1:-}"
}
"$TIERFS" mkfs --backend dir --path "$work/store" --chunk-size 1M > /dev/null

# ---------------------------------------------------------------- private files, umask 0
# A device file and an index directory left open by hand are closed at the start.
touch "$work/cache0" && chmod 666 "$work/cache0"
mkdir "$work/cache0.index" && chmod 777 "$work/cache0.index"
config > "$work/a.toml"
umask 000
start_tierfs "$mnt" "$work/log" "$work/a.toml" --allow-other
umask 022
[[ $(mode "$work/cache0") == 600 ]] || fail "cache device is mode $(mode "$work/cache0")"
[[ $(mode "$work/cache0.index") == 700 ]] || fail "index dir is mode $(mode "$work/cache0.index")"
[[ $(mode "$work/ctl.sock") == 600 ]] || fail "control socket is mode $(mode "$work/ctl.sock")"
grep -q "cache device $work/cache0 was mode 0666: changed to 0600" "$work/log" ||
  fail "no warning about the open device file: $(cat "$work/log")"
grep -q "cache index directory $work/cache0.index was mode 0777: changed to 0700" "$work/log" ||
  fail "no warning about the open index: $(cat "$work/log")"
echo "ok: device 0600, index 0700, socket 0600 under umask 0; open ones closed with a warning"

# ---------------------------------------------------------------- permissions through the mount
mkdir -p "$mnt/data/sub"
for i in 1 2 3; do head -c 300000 /dev/urandom > "$mnt/data/f$i"; done
echo "top secret" > "$mnt/data/secret"
chown "$owner:$owner" "$mnt/data/secret" && chmod 600 "$mnt/data/secret"
chown "$owner:$owner" "$mnt/data/sub" && chmod 700 "$mnt/data/sub"
echo "inside" > "$mnt/data/sub/file"
run as "$other" "" -- cat "$mnt/data/secret"
expect_rc 1 "uid $other reads a 0600 file of uid $owner"
expect_err "Permission denied" "uid $other reads a 0600 file"
grep -q secret "$work/out" && fail "uid $other got the content"
run as "$other" "" -- ls "$mnt/data/sub"
expect_rc 2 "uid $other lists a 0700 directory of uid $owner"
run as "$owner" "" -- cat "$mnt/data/secret"
expect_rc 0 "the owner reads the file"
[[ $(cat "$work/out") == "top secret" ]] || fail "the owner read $(cat "$work/out")"
run as "$other" "" -- cat "$mnt/data/f1"
expect_rc 0 "uid $other reads a 0644 file with allow_other"
echo "ok: allow_other: a 0600 file is read by its owner only, a 0700 directory listed by no other"

# ---------------------------------------------------------------- the socket: owner and root only
# refused COMMAND: uid $owner (not the daemon's user) runs tierfs COMMAND $mnt/data, refused.
refused() {
  run as "$owner" "" -- "$TIERFS" "$1" "$mnt/data"
  expect_rc 1 "uid $owner: tierfs $1"
  expect_err "Permission ?[dD]enied" "uid $owner: tierfs $1"
}
"$TIERFS" evict "$mnt/data" > /dev/null  # what the writes left in the cache
refused warm
[[ $(cached_files data) == 0 ]] || fail "a refused warm-up cached something"
"$TIERFS" warm "$mnt/data" > /dev/null || fail "warm of data failed"
all=$(cached_files data)
((all == 5)) || fail "warm of data cached $all files, not 5"
refused evict
refused status
[[ $(cached_files data) == "$all" ]] || fail "a refused evict dropped something"
echo "ok: a user who is neither root nor the daemon's user cannot warm, evict or ask for status"

# ---------------------------------------------------------------- hostile paths
"$TIERFS" evict "$mnt/data/f1" > /dev/null
ln -s /etc "$mnt/data/escape"
long=$(printf 'n%.0s' $(seq 255))
# hostile NAME PATH REGEX: warm, evict and status of PATH all fail with exit 1 and the message.
hostile() {
  local name=$1 path=$2 regex=$3 cmd
  for cmd in warm evict status; do
    run "$TIERFS" "$cmd" "$path"
    expect_rc 1 "$cmd $name"
    expect_err "^tierfs $cmd: .*$regex" "$cmd $name"
    if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/err"; then
      fail "$cmd $name: a raw control character in: $(cat -v "$work/err")"
    fi
  done
  alive "$name"
  echo "ok: $name: $(head -1 "$work/err")"
}
hostile "outside the mount" /etc/passwd "/etc/passwd is not in a tierfs mount"
hostile ".. escape" "$mnt/data/../../../../../../../etc/passwd" \
  "is not in a tierfs mount, it resolves to /etc/passwd"
hostile "a symlink out" "$mnt/data/escape/passwd" "is not in a tierfs mount, it resolves to /etc/passwd"
hostile "a name of 256 bytes" "$mnt/data/${long}x" \
  "the name 'nnnnnnnnnnnnnnnn...' is 256 bytes long, more than the 255 a file name may have"
hostile "a missing name with control characters" "$mnt/data/no"$'\x1b[2J\nsuch\t' \
  'data/no\\x1b\[2J\\nsuch\\t: No such file or directory'
hostile "a missing name in invalid UTF-8" "$mnt/data/bad"$'\xff\xfe' \
  'data/bad\\xff\\xfe: No such file or directory'
# One bad path among good ones: nothing is evicted.
run "$TIERFS" evict "$mnt/data/f2" "$mnt/data/escape/passwd"
expect_rc 1 "evict of a good and a bad path"
[[ $(cached_files data) == $((all - 1)) ]] || fail "an evict with a bad path evicted something"
# An empty path is a usage error.
for cmd in warm evict status; do
  run "$TIERFS" "$cmd" ""
  expect_rc 2 "$cmd of an empty path"
  expect_err "^tierfs $cmd: an empty path names no file or directory" "$cmd of an empty path"
done
echo "ok: an empty path is a usage error (exit 2)"
[[ $(cached_files data) == $((all - 1)) ]] || fail "a hostile path warmed or evicted something"
echo "ok: nothing was warmed or evicted by a refused path"

# Names that are fine: NAME_MAX bytes, control characters, invalid UTF-8; relative paths.
printf 'x' > "$mnt/data/$long"
odd="ctl"$'\x1b[31m\n'"bad"$'\xff'
printf 'y' > "$mnt/data/$odd"
run "$TIERFS" warm "$mnt/data/$long" "$mnt/data/$odd"
expect_rc 0 "warm of names at NAME_MAX and with control characters"
run "$TIERFS" status "$mnt/data/$odd"
expect_rc 0 "status of a name with control characters"
grep -qF 'ctl\x1b[31m\nbad\xff: 1 of 1 files cached' "$work/out" ||
  fail "status of an odd name: $(cat -v "$work/out")"
(cd "$mnt/data" && "$TIERFS" warm f1 > /dev/null) || fail "warm of a relative path"
run bash -c "cd '$mnt/data' && '$TIERFS' status f1"
expect_rc 0 "status of a relative path"
grep -q '^f1: 1 of 1 files cached' "$work/out" || fail "status f1: $(cat "$work/out")"
echo "ok: names at NAME_MAX, with control characters or invalid UTF-8, and relative paths work"
alive "after the hostile paths"
stop_tierfs "$mnt" "$work/log"

# ---------------------------------------------------------------- without allow_other
start_tierfs "$mnt" "$work/log" "$work/a.toml"
run as "$owner" "" -- stat "$mnt"
expect_rc 1 "uid $owner stats a mount without allow_other"
expect_err "Permission denied" "stat without allow_other"
run as "$owner" "" -- cat "$mnt/data/f1"
expect_rc 1 "uid $owner reads a 0644 file without allow_other"
ls "$mnt/data" > /dev/null || fail "root cannot list its own mount"
stop_tierfs "$mnt" "$work/log"
echo "ok: without allow_other, other users cannot enter the mount"

# ---------------------------------------------------------------- [control] allow_users, groups
config "allow_users = [$other]
allow_groups = [$group]" > "$work/b.toml"
run "$TIERFS" config check "$work/b.toml"
expect_rc 0 "config check of allow_users"
start_tierfs "$mnt" "$work/log" "$work/b.toml" --allow-other
[[ $(mode "$work/ctl.sock") == 666 ]] || fail "socket with allow lists: mode $(mode "$work/ctl.sock")"
"$TIERFS" evict "$mnt/data" > /dev/null
run as "$other" "" -- "$TIERFS" warm "$mnt/data/f1"
expect_rc 0 "uid $other (allow_users) warms"
run as "$grouped" "$group" -- "$TIERFS" evict "$mnt/data/f1"
expect_rc 0 "uid $grouped in group $group (allow_groups) evicts"
run as "$grouped" "" -- "$TIERFS" warm "$mnt/data/f1"
expect_rc 1 "uid $grouped without group $group warms"
expect_err "uid $grouped may not control this mount" "uid $grouped without the group"
run as "$owner" "" -- "$TIERFS" status "$mnt/data"
expect_rc 1 "uid $owner (not listed) asks for status"
[[ $(cached_files data) == 0 ]] || fail "a refused user warmed something"
stop_tierfs "$mnt" "$work/log"
echo "ok: allow_users and allow_groups let in exactly the users they name; socket 0666"

# ---------------------------------------------------------------- keyring mode (no cluster)
printf '[client.admin]\n\tkey = AQDsecurityTestKeyNeverPrinted==\n' > "$work/open.keyring"
chmod 644 "$work/open.keyring"
printf '[global]\nmon_host = 127.0.0.1:1\n' > "$work/ceph.conf"
rflags=(--backend rados --conf "$work/ceph.conf" --pool p --timeout 2s)
for cmd in "mkfs" "fsck" "object ls" "mount -f $mnt"; do
  # shellcheck disable=SC2086
  run "$TIERFS" $cmd "${rflags[@]}" --keyring "$work/open.keyring"
  expect_rc 1 "tierfs $cmd with a 0644 keyring"
  expect_err "keyring $work/open.keyring is readable by other users \(mode 0644\): chmod 600 it, or pass --allow-open-keyring" \
    "tierfs $cmd with a 0644 keyring"
  ! grep -q AQDsecurity "$work/out" "$work/err" || fail "tierfs $cmd printed the key"
done
mountpoint -q "$mnt" && fail "a mount with an open keyring came up"
# The keyring the conf names is checked too.
printf '[global]\nmon_host = 127.0.0.1:1\nkeyring = %s\n' "$work/open.keyring" > "$work/ceph.conf"
run "$TIERFS" fsck "${rflags[@]}"
expect_rc 1 "fsck with the conf's 0644 keyring"
expect_err "keyring $work/open.keyring is readable by other users" "the conf's keyring"
# Allowed: the check passes and the command goes on to the (absent) cluster.
run "$TIERFS" fsck "${rflags[@]}" --allow-open-keyring
expect_rc 1 "fsck --allow-open-keyring"
grep -q "is readable by other users" "$work/err" && fail "--allow-open-keyring did not allow"
expect_err "cannot connect to the Ceph cluster|Unavailable|timed out" "fsck --allow-open-keyring"
echo "ok: an open keyring is refused by mkfs, fsck, object and mount; --allow-open-keyring passes"

# ---------------------------------------------------------------- the key in logs (cluster)
if [[ -n $cluster_env ]]; then
  # shellcheck disable=SC1090
  source "$cluster_env"
  [[ $(mode "$TIERFS_CEPH_KEYRING") == 600 ]] ||
    fail "the test cluster's keyring is mode $(mode "$TIERFS_CEPH_KEYRING")"
  key=$(sed -n 's/^[[:space:]]*key = //p' "$TIERFS_CEPH_KEYRING" | head -1)
  [[ -n $key ]] || fail "no key in $TIERFS_CEPH_KEYRING"
  ns="security-$$"
  read -ra flags <<< "$(rados_flags "$cluster_env" "$ns")"
  "$TIERFS" mkfs "${flags[@]}" > "$work/keylog" 2>&1
  {
    rados_config "$cluster_env" "$ns"
    printf '[logging]\nlevel = "trace"\n[control]\nsocket = "%s"\n' "$work/ctl.sock"
  } > "$work/r.toml"
  "$TIERFS" config show "$work/r.toml" >> "$work/keylog" 2>&1
  start_tierfs "$mnt" "$work/rlog" "$work/r.toml"
  head -c 3000000 /dev/urandom > "$mnt/file"
  cat "$mnt/file" > /dev/null
  "$TIERFS" warm "$mnt" >> "$work/keylog" 2>&1
  stop_tierfs "$mnt" "$work/rlog"
  start_tierfs "$mnt" "$work/dlog" "${flags[@]}" -d
  ls "$mnt" > /dev/null
  stop_tierfs "$mnt" "$work/dlog"
  lines=$(cat "$work/rlog" "$work/dlog" | wc -l)
  ((lines > 20)) || fail "the trace logs hold only $lines lines"
  if grep -qF -- "$key" "$work/keylog" "$work/rlog" "$work/dlog"; then
    fail "the cephx key is in a log: $(grep -lF -- "$key" "$work/keylog" "$work/rlog" "$work/dlog")"
  fi
  echo "ok: the cephx key is in none of $lines lines of trace and -d logs, nor in config show"
fi
echo "security.sh: passed"
