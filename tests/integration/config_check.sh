#!/usr/bin/env bash
# `tierfs config check` and `tierfs config show`: a table of bad inputs, each of whose errors must
# name the key and FILE:LINE; the exit codes (0 valid, 1 invalid, 2 usage or unreadable file);
# the example deploy/tierfs.toml; show's output (defaults, flags applied, no secrets) passing
# check and printing itself again; and check creating nothing.
set -euo pipefail
tierfs=$1
example=$2
work=$(mktemp -d)
# The free-space cases run on a filesystem of their own: other tests running beside this one
# change the free space of the shared one between a measurement and a check.
small=$work/small
mkdir "$small"
mount -t tmpfs -o size=256m tierfs-config-test "$small"
trap 'umount "$small"; rm -rf "$work"' EXIT
# The file a command reads when given none must not come from this machine's /etc.
unset TIERFS_CONFIG
export HOME=$work/home

fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs tierfs with the arguments; sets rc and leaves the output in $work/out and $work/err.
run() {
  set +e
  "$tierfs" "$@" > "$work/out" 2> "$work/err"
  rc=$?
  set -e
}
expect_rc() { [[ $rc == "$1" ]] || fail "$2: exit $rc, wanted $1: $(cat "$work/out" "$work/err")"; }
expect_err() { grep -Eq -- "$1" "$work/err" || fail "$2: no /$1/ in: $(cat "$work/err")"; }
expect_out() { grep -Eq -- "$1" "$work/out" || fail "$2: no /$1/ in: $(cat "$work/out")"; }

cfg=$work/t.toml
header="[backend]
type = \"dir\"
[backend.dir]
path = \"$work/store\""   # lines 1-4; every case's own lines start at line 5

# bad_case NAME TOML REGEX: the config (after the header) is invalid, and the error matches.
bad_case() {
  printf '%s\n%s\n' "$header" "$2" > "$cfg"
  run config check "$cfg"
  expect_rc 1 "$1"
  expect_err "$3" "$1"
  echo "ok: $1"
}

F=$(printf '%s' "$cfg" | sed 's/[.[\*^$()+?{|]/\\&/g')  # the file name as a regex
bad_case "unknown section" '[backnd]' "^tierfs config check: InvalidArgument: $F:5: unknown section 'backnd'"
bad_case "unknown key" $'[fuse]\nthredas = 4' "$F:6: unknown key 'thredas' in \[fuse\]"
bad_case "unknown key in a device" \
  $'[[cache.device]]\npath = "/tmp/x"\nsize = "16M"\nsise = "1G"' \
  "$F:8: unknown key 'sise' in \[cache.device#1\]"
bad_case "wrong type: integer" $'[fuse]\nthreads = "many"' \
  "$F:6: \[fuse\] threads must be an integer from 1 to 1024"
bad_case "wrong type: boolean" $'[metrics]\nenabled = "yes"' \
  "$F:6: \[metrics\] enabled must be true or false"
bad_case "wrong type: size" $'[cache]\nmemory_size = true' \
  "$F:6: \[cache\] memory_size must be a size"
bad_case "wrong type: section" $'[[fuse]]\nthreads = 2' "$F:5: 'fuse' must be a table: \[fuse\]"
bad_case "out of range: integer" $'[fuse]\nthreads = 5000' \
  "$F:6: \[fuse\] threads must be an integer from 1 to 1024"
bad_case "out of range: max_read" $'[fuse]\n\nmax_read = "2M"' \
  "$F:7: \[fuse\] max_read must be from 4K to 1M"
bad_case "out of range: region_size alone" $'[cache]\nregion_size = "300M"' \
  "$F:6: \[cache\] region_size must be from 1M to 256M"
bad_case "out of range: sample rate 0" $'[advisor]\nsample_rate = 0' \
  "$F:6: \[advisor\] sample_rate must be more than 0 and at most 1"
bad_case "out of range: sample rate 1.5" $'[advisor]\nsample_rate = 1.5' \
  "$F:6: \[advisor\] sample_rate must be more than 0 and at most 1"
bad_case "out of range: high watermark above 1" $'[cache]\nhigh_watermark = 1.2' \
  "$F:6: \[cache\] high_watermark must be above 0 and at most 1"
bad_case "watermarks out of order" $'[cache]\nhigh_watermark = 0.5\nlow_watermark = 0.8' \
  "$F:7: \[cache\] low_watermark must be above 0 and at most high_watermark \(0.5\)"
bad_case "out of range: max_samples" $'[advisor]\nmax_samples = 3' \
  "$F:6: \[advisor\] max_samples must be an integer from 64"
bad_case "bad size unit" $'[cache]\nmemory_size = "12Q"' \
  "$F:6: \[cache\] memory_size '12Q': unknown size unit 'Q'"
bad_case "bad duration" $'[fuse]\nattr_timeout = "5 fortnights"' \
  "$F:6: \[fuse\] attr_timeout '5 fortnights': unknown duration unit"
bad_case "bad duration: a number" $'[logging]\nrepeat_window = 10' \
  "$F:6: \[logging\] repeat_window must be a duration"
bad_case "bad choice: eviction" $'[cache]\neviction = "random"' \
  "$F:6: \[cache\] eviction must be \"fifo\", \"lru\" or \"training\", not \"random\""
bad_case "bad choice: admission" $'[cache]\nadmission = "never"' \
  "$F:6: \[cache\] admission must be \"always\" or \"second_miss\""
bad_case "bad choice: compression" $'[fs]\ncompression = "lz4"' \
  "$F:6: \[fs\] compression must be \"zstd\" or \"none\", not \"lz4\""
bad_case "bad metrics address: no port" $'[metrics]\naddress = "localhost"' \
  "$F:6: \[metrics\] address must be HOST:PORT"
bad_case "bad metrics address: port" $'[metrics]\naddress = "127.0.0.1:99999"' \
  "$F:6: \[metrics\] address '127.0.0.1:99999': the port must be a number from 1 to 65535"
bad_case "bad metrics address: host" $'[metrics]\naddress = "a b:80"' \
  "$F:6: \[metrics\] address 'a b:80': the host must be"
bad_case "bad log level" $'[logging]\nlevel = "loud"' \
  "$F:6: \[logging\] level must be one of trace, .* not \"loud\""
bad_case "bad log target" $'[logging]\ntarget = "tierfs.log"' \
  "$F:6: \[logging\] target must be \"stderr\", \"journal\" or an absolute file path"
bad_case "log file in no directory" $'[logging]\ntarget = "/no/such/dir/tierfs.log"' \
  "$F:6: \[logging\] target '/no/such/dir/tierfs.log': directory /no/such/dir does not exist"
# Found by tests/fuzz (config target): this error named no file or line.
bad_case "fault: unknown op" $'[[fault]]\nop = "write"' \
  "$F:6: \[\.fault#1\] op must be one of any, .* not \"write\""
bad_case "relative control socket" $'[control]\nsocket = "x.sock"' \
  "$F:6: \[control\] socket must be an absolute path"
bad_case "control: unknown user" $'[control]\nallow_users = ["root", "no-such-user-x"]' \
  "$F:6: \[control\] allow_users names user 'no-such-user-x', which this node does not know"
bad_case "control: unknown group" $'[control]\n\nallow_groups = ["no-such-group-x"]' \
  "$F:7: \[control\] allow_groups names group 'no-such-group-x', which this node does not know"
bad_case "control: users not a list" $'[control]\nallow_users = "alice"' \
  "$F:6: \[control\] allow_users must be an array of names and ids"
bad_case "control: negative uid" $'[control]\nallow_users = [-5]' \
  "$F:6: \[control\] allow_users id -5 is out of range"
bad_case "relative device path" $'[[cache.device]]\npath = "cache0"\nsize = "1G"' \
  "$F:6: \[cache.device#1\] path must be an absolute path"
bad_case "device without a size" $'[[cache.device]]\npath = "/tmp/cache0"' \
  "$F:5: \[cache.device#1\] size must be given and more than 0"
bad_case "device in a missing directory" $'[[cache.device]]\npath = "/no/such/dir/c0"\nsize = "1G"' \
  "$F:6: \[cache.device#1\] path '/no/such/dir/c0': directory /no/such/dir does not exist"
bad_case "device larger than its filesystem's free space" \
  $'[[cache.device]]\npath = "'"$work"$'/c0"\nsize = "1000P"' \
  "$F:7: \[cache.device#1\] size 1000.0 PiB does not fit: the filesystem holding $work/c0 has .* free"
# Two devices that fit one at a time but not together on one filesystem.
free=$(python3 -c "import os; s=os.statvfs('$small'); print(s.f_bavail*s.f_frsize)")
part=$((free / 10 * 6))
bad_case "devices together larger than the free space" \
  $'[[cache.device]]\npath = "'"$small"$'/c0"\nsize = '"$part"$'\n[[cache.device]]\npath = "'"$small"$'/c1"\nsize = '"$part" \
  "$F:10: \[cache.device#2\] size .* does not fit: .*, of which devices above claim"
bad_case "region larger than the device" \
  $'[cache]\nregion_size = "64M"\n[[cache.device]]\npath = "'"$work"$'/c0"\nsize = "32M"' \
  "$F:9: \[cache.device#1\] size 32.0 MiB holds no region of 64.0 MiB \(\[cache\] region_size\)"
bad_case "second device smaller than a region" \
  $'[[cache.device]]\npath = "'"$work"$'/c0"\nsize = "64M"\n[[cache.device]]\npath = "'"$work"$'/c1"\nsize = "8M"' \
  "$F:10: \[cache.device#2\] size 8.0 MiB holds no region of 16.0 MiB"
bad_case "TOML syntax" $'[fuse]\nthreads = = 4' "$F:6:"
printf '[backend]\ntype = "s3"\n' > "$cfg"
run config check "$cfg"
expect_rc 1 "back-end type"
expect_err "$F:2: \[backend\] type must be \"dir\" or \"rados\", not \"s3\"" "back-end type"
echo "ok: back-end type"
printf '[backend]\ntype = "rados"\n[backend.rados]\nuser = "client.x"\n' > "$cfg"
run config check "$cfg"
expect_rc 1 "rados without a pool"
expect_err "$F: the rados back end needs a pool: \[backend.rados\] pool" "rados without a pool"
echo "ok: rados without a pool"
# A file of tuning alone: the back end must then come from the flags.
printf '[prefetch]\nsweep = false\n' > "$cfg"
run config check "$cfg"
expect_rc 1 "no back end anywhere"
expect_err "$F: no \[backend\] section \(type = \"dir\" or \"rados\"\), and no --backend flag" \
  "no back end anywhere"
run config show --backend dir --path "$work/store" "$cfg"
expect_rc 0 "the back end from flags, the tuning from the file"
expect_out '^type = "dir"$' "the back end from flags"
expect_out '^sweep = false$' "the tuning from the file"
echo "ok: a file without [backend] takes the back end from the flags"
# A keyring other users may read or write is refused at its line, unless allowed.
printf '[client.x]\n\tkey = AQDsecretsecretsecret==\n' > "$work/open.keyring"
for mode in 644 640 602; do
  chmod "$mode" "$work/open.keyring"
  printf '[backend]\ntype = "rados"\n[backend.rados]\npool = "p"\nkeyring = "%s"\n' \
    "$work/open.keyring" > "$cfg"
  run config check "$cfg"
  expect_rc 1 "keyring mode $mode"
  expect_err "$F:5: \[backend.rados\] keyring keyring $work/open.keyring is (readable|writable) by (other users|its group) \(mode 0$mode\): chmod 600 it, or pass --allow-open-keyring" \
    "keyring mode $mode"
  ! grep -q AQDsecret "$work/err" || fail "keyring mode $mode: the key was printed"
  echo "ok: keyring mode $mode refused"
done
printf 'allow_open_keyring = true\n' >> "$cfg"
run config check "$cfg"
expect_rc 0 "allow_open_keyring = true"
sed -i '$d' "$cfg"
run config show "$cfg" --allow-open-keyring
expect_rc 0 "--allow-open-keyring"
expect_out '^allow_open_keyring = true$' "--allow-open-keyring"
chmod 600 "$work/open.keyring"
run config check "$cfg"
expect_rc 0 "keyring mode 600"
echo "ok: an open keyring passes with allow_open_keyring or --allow-open-keyring; 0600 passes"

# A device file and index an earlier run made already hold part of the size: it fits when the
# free space plus what they occupy (64M + 32M) covers it, here with 16M to spare.
mkdir "$small/c0.index"
python3 -c "import os
for path, size in (('$small/c0', 64 << 20), ('$small/c0.index/000001.sst', 32 << 20)):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY); os.posix_fallocate(fd, 0, size); os.close(fd)"
free=$(python3 -c "import os; s=os.statvfs('$small'); print(s.f_bavail*s.f_frsize)")
printf '%s\n[[cache.device]]\npath = "%s/c0"\nsize = %d\n' "$header" "$small" \
  $((free + (80 << 20))) > "$cfg"
run config check "$cfg"
expect_rc 0 "a device an earlier run made"
printf '%s\n[[cache.device]]\npath = "%s/c0"\nsize = %d\n' "$header" "$small" \
  $((free + (112 << 20))) > "$cfg"
run config check "$cfg"
expect_rc 1 "a device an earlier run made, grown beyond the free space"
expect_err "$F:7: \[cache.device#1\] size .* does not fit: .* free plus the 96.0 MiB the device \(and index\) already occupy" \
  "a device an earlier run made, grown"
rm -rf "$small/c0" "$small/c0.index"
echo "ok: what a device and its index already occupy counts as room for them"

# ---------------------------------------------------------------- exit codes
printf '%s\n' "$header" > "$cfg"
run config check "$cfg"
expect_rc 0 "a minimal config"
expect_out "^$F: valid$" "a minimal config"
grep -q '^note:' "$work/out" && fail "a minimal config: a note: $(cat "$work/out")"
# Valid, with a note: a read-ahead window the memory cache cannot keep ahead of readers.
printf '%s\n[cache]\nmemory_size = "64M"\n[prefetch]\nmax_window = "64M"\n' "$header" > "$cfg"
run config check "$cfg"
expect_rc 0 "a window larger than memory"
expect_out "^note: \[prefetch\] max_window 64M and read_ahead_budget 64M need a memory cache of 4x and 2x them \(memory_size is 64M\).*using max_window 16M and read_ahead_budget 32M$" \
  "a window larger than memory"
run config check "$work/absent.toml"
expect_rc 2 "a missing file"
expect_err "cannot read $work/absent.toml: No such file or directory" "a missing file"
if [[ ! -e /etc/tierfs/tierfs.toml ]]; then
  run config check
  expect_rc 2 "no file at all"
  expect_err "no config file: name one, set TIERFS_CONFIG or create /etc/tierfs/tierfs.toml" \
    "no file at all"
fi
TIERFS_CONFIG=$cfg run config check
expect_rc 0 "the file named by TIERFS_CONFIG"
expect_out "^$F: valid$" "the file named by TIERFS_CONFIG"
run config check "$cfg" "$cfg"
expect_rc 2 "two files"
run config frobnicate
expect_rc 2 "an unknown subcommand"
run config
expect_rc 2 "no subcommand"
echo "ok: exit codes"

# ---------------------------------------------------------------- the example
run config check "$example"
expect_rc 0 "deploy/tierfs.toml"
echo "ok: the example config passes"

# ---------------------------------------------------------------- check creates nothing
printf '%s\n[[cache.device]]\npath = "%s/c0"\nsize = "32M"\n' "$header" "$work" > "$cfg"
run config check "$cfg"
expect_rc 0 "a config with a device"
[[ ! -e $work/store && ! -e $work/c0 && ! -e $work/c0.index ]] ||
  fail "config check created something: $(ls "$work")"
echo "ok: check creates neither the store nor the device"

# ---------------------------------------------------------------- show
run config show "$example"
expect_rc 0 "show the example"
cp "$work/out" "$work/shown.toml"
for line in 'max_read = "1M"' 'region_size = "16M"' 'address = "127.0.0.1:9464"' \
  'repeat_window = "10s"' 'sample_rate = 0.01' 'user = "client.admin"' 'enabled = false'; do
  grep -qxF "$line" "$work/shown.toml" || fail "show: no '$line' in: $(cat "$work/shown.toml")"
done
run config check "$work/shown.toml"
expect_rc 0 "show's output passes check"
run config show "$work/shown.toml"
cmp -s "$work/out" "$work/shown.toml" || fail "show of show's output differs: $(diff "$work/shown.toml" "$work/out")"
echo "ok: show prints the defaults as TOML that check accepts and that shows the same again"

# Defaults with no file at all: what `tierfs mount MOUNTPOINT` alone would use.
if [[ ! -e /etc/tierfs/tierfs.toml ]]; then
  run config show
  expect_rc 0 "show with nothing configured"
  expect_out '^type = "dir"$' "show with nothing configured"
  expect_out "^path = \"(/var/lib/tierfs/store|$work/home/.local/share/tierfs/store)\"$" \
    "the embedded store"
  echo "ok: show with no file prints the embedded default"
fi

# Flags override single keys; the rest stays the file's.
printf '%s\n[fuse]\nthreads = 4\nentry_timeout = "2s"\n[logging]\nlevel = "warn"\n' \
  "$header" > "$cfg"
run config show "$cfg" --threads 7 --attr-timeout 250ms --cache-memory 1G -d \
  --log "$work/t.log" --path "$work/other"
expect_rc 0 "show with flags"
for line in 'threads = 7' 'attr_timeout = "250ms"' 'entry_timeout = "2s"' 'memory_size = "1G"' \
  'level = "debug"' "target = \"$work/t.log\"" "path = \"$work/other\""; do
  grep -qxF "$line" "$work/out" || fail "show with flags: no '$line' in: $(cat "$work/out")"
done
echo "ok: flags override single keys"

# The file named beats TIERFS_CONFIG.
printf '%s\n[fuse]\nthreads = 3\n' "$header" > "$work/other.toml"
TIERFS_CONFIG=$work/other.toml run config show
expect_out '^threads = 3$' "show with TIERFS_CONFIG"
TIERFS_CONFIG=$work/other.toml run config show "$cfg"
expect_out '^threads = 4$' "a file named beats TIERFS_CONFIG"
echo "ok: TIERFS_CONFIG is read when no file is named"

# No secret is printed: the keyring is named, never read.
printf '[client.tierfs]\n\tkey = AQDsecretsecretsecret==\n' > "$work/keyring"
chmod 600 "$work/keyring"
printf '[backend]\ntype = "rados"\n[backend.rados]\npool = "p"\nkeyring = "%s"\n' \
  "$work/keyring" > "$cfg"
run config show "$cfg"
expect_rc 0 "show a rados config"
expect_out "^keyring = \"$work/keyring\"$" "the keyring's path"
! grep -q AQDsecret "$work/out" || fail "show printed the key: $(cat "$work/out")"
echo "ok: show prints the keyring's path, not its key"
