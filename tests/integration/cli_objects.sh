#!/usr/bin/env bash
# `tierfs object` against the test cluster and a dir store: put, get, stat, ls, rm, df, and the
# errors a user sees for a missing object, a missing pool and bad flags.
set -euo pipefail
tierfs=$1
env_file=$2
# shellcheck disable=SC1090
source "$env_file"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# The exact byte count of a `tierfs object df` line ("total:  16.0 GiB (17179869184 bytes)").
bytes_of() { sed -nE "s/^$1: +[0-9.]+ (B|[KMGTPE]iB) \(([0-9]+) bytes\)\$/\2/p" "$work/df"; }
rados_flags=(--backend rados --conf "$TIERFS_CEPH_CONF" --keyring "$TIERFS_CEPH_KEYRING"
             --user "$TIERFS_CEPH_USER" --pool "$TIERFS_CEPH_POOL" --namespace "cli-$$")
dir_flags=(--backend dir --path "$work/store")

head -c 5000000 /dev/urandom > "$work/in"
for flags in rados dir; do
  if [[ $flags == rados ]]; then f=("${rados_flags[@]}"); else f=("${dir_flags[@]}"); fi
  "$tierfs" object put "${f[@]}" blob "$work/in"
  "$tierfs" object get "${f[@]}" blob "$work/out"
  cmp "$work/in" "$work/out" || fail "$flags: object read back differs"
  echo piped | "$tierfs" object put "${f[@]}" small
  [[ $("$tierfs" object get "${f[@]}" small) == piped ]] || fail "$flags: stdin/stdout round trip"
  "$tierfs" object stat "${f[@]}" blob | grep -q '^size: *5000000$' || fail "$flags: stat size"
  [[ $("$tierfs" object ls "${f[@]}" | sort | tr '\n' ' ') == "blob small " ]] ||
    fail "$flags: ls shows $("$tierfs" object ls "${f[@]}" | tr '\n' ' ')"
  "$tierfs" object rm "${f[@]}" blob
  if "$tierfs" object get "${f[@]}" blob > /dev/null 2> "$work/err"; then
    fail "$flags: get of a removed object succeeded"
  fi
  grep -q "NotFound: read 'blob'" "$work/err" || fail "$flags: unclear error: $(cat "$work/err")"
  # df: RADOS statistics come from ceph-mgr, and a new cluster has none for its first seconds.
  for _ in $(seq 60); do
    "$tierfs" object df "${f[@]}" > "$work/df" 2> "$work/err" && break
    grep -q "Unavailable" "$work/err" || fail "$flags: df: $(cat "$work/err")"
    sleep 1
  done
  total=$(bytes_of total) used=$(bytes_of used) avail=$(bytes_of avail)
  [[ -n $total && -n $used && -n $avail ]] && (( total > 0 && avail <= total && used <= total )) ||
    fail "$flags: df: $(cat "$work/df" "$work/err")"
  # The dir store counts exactly (only `small` is left); the pool's count lags and is shared.
  if [[ $flags == dir ]]; then want='^objects: +1$'; else want='^objects: +[0-9]+$'; fi
  grep -Eq "$want" "$work/df" || fail "$flags: df objects: $(cat "$work/df")"
  echo "ok: $flags back end"
done

set +e
"$tierfs" object ls "${rados_flags[@]:0:8}" --pool no-such-pool 2> "$work/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "pool 'no-such-pool' does not exist" "$work/err" ||
  fail "missing pool: rc=$rc $(cat "$work/err")"
set +e
"$tierfs" object get --backend nfs x 2> "$work/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q -- "--backend" "$work/err" || fail "bad flag: rc=$rc $(cat "$work/err")"
echo "ok: errors"

# The same back end from a config file; flags override single keys; bad keys name file and line.
cat > "$work/tierfs.toml" <<TOML
[backend]
type = "rados"
timeout = "20s"
requests_in_flight = 8

[backend.rados]
conf = "$TIERFS_CEPH_CONF"
keyring = "$TIERFS_CEPH_KEYRING"
user = "$TIERFS_CEPH_USER"
pool = "$TIERFS_CEPH_POOL"
namespace = "cli-$$"
TOML
[[ $("$tierfs" object get --config "$work/tierfs.toml" small) == piped ]] ||
  fail "config file: could not read the object written with flags"
"$tierfs" object ls --config "$work/tierfs.toml" --namespace "other-$$" > "$work/out"
[[ ! -s "$work/out" ]] || fail "--namespace did not override the file: $(cat "$work/out")"
printf '[backend]\ntype = "rados"\ntimeuot = "5s"\n' > "$work/bad.toml"
set +e
"$tierfs" object ls --config "$work/bad.toml" 2> "$work/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "bad.toml:3: unknown key 'timeuot' in \[backend\]" "$work/err" ||
  fail "bad key: rc=$rc $(cat "$work/err")"
printf '[backend]\nrequests_in_flight = "many"\n' > "$work/bad.toml"
set +e
"$tierfs" object ls --config "$work/bad.toml" 2> "$work/err"; rc=$?
set -e
grep -q "bad.toml:2: \[backend\] requests_in_flight must be an integer" "$work/err" ||
  fail "bad value: rc=$rc $(cat "$work/err")"
echo "ok: config file"
echo "cli_objects: all checks passed"
