#!/usr/bin/env bash
# `tierfs fsck` against a dir store: exit codes (0 clean, 1 problems, 2 usage), the grace period
# for recent orphans, --repair, --json, and the errors a user sees.
set -euo pipefail
tierfs=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
store=(--backend dir --path "$work/store")
# fsck with the given flags; sets rc, leaves the output in $work/out and $work/err.
fsck() {
  set +e
  "$tierfs" fsck "${store[@]}" "$@" > "$work/out" 2> "$work/err"
  rc=$?
  set -e
}
expect_rc() { [[ $rc == "$1" ]] || fail "$2: exit $rc, wanted $1: $(cat "$work/out" "$work/err")"; }
expect_out() { grep -Eq -- "$1" "$work/out" || fail "$2: no /$1/ in: $(cat "$work/out")"; }
json() { python3 -c "import json,sys; d=json.load(open('$work/out')); print($1)"; }

"$tierfs" mkfs "${store[@]}" > /dev/null
fsck
expect_rc 0 "new volume"
expect_out '^clean$' "new volume"
echo "ok: a new volume is clean"

# An upload that no file refers to: left alone while young, then garbage.
printf 'chunk' | "$tierfs" object put "${store[@]}" c.300.99.0
"$tierfs" object put "${store[@]}" d.3f0 /dev/null  # a directory object with no entry
fsck
# Their ids are beyond the allocator's (a new volume has handed out none): that is a problem.
expect_rc 1 "recent orphans"
expect_out '^recent +orphan-chunk: c\.300\.99\.0: .*recent, left alone' "recent orphan chunk"
expect_out '^recent +unreachable-dir: d\.3f0: ' "recent directory object"
expect_out '^found +id-allocator-behind: tierfs\.volume: next_id is 2 but id 1008 is in use' \
  "id allocator"
expect_out '^1 problem\(s\) found' "summary of recent orphans"
fsck --repair
expect_rc 0 "repair of recent orphans"
expect_out '^repaired +id-allocator-behind: .*raised it to 1009' "id allocator repair"
"$tierfs" object stat "${store[@]}" c.300.99.0 > /dev/null || fail "a recent orphan was removed"
"$tierfs" object stat "${store[@]}" d.3f0 > /dev/null || fail "a recent directory was removed"
fsck
expect_rc 0 "recent orphans only"
echo "ok: recent orphans are left alone"

fsck --min-age 0
expect_rc 1 "old orphans"
expect_out '^found +orphan-chunk: c\.300\.99\.0' "old orphan chunk"
expect_out '^2 problem\(s\) found' "summary"
fsck --min-age 0 --json
expect_rc 1 "old orphans, json"
[[ $(json 'd["clean"], d["summary"]["problems"], len(d["findings"])') == "False 2 2" ]] ||
  fail "json: $(cat "$work/out")"
[[ $(json '[f["kind"] for f in d["findings"] if f["problem"]]') == \
   "['unreachable-dir', 'orphan-chunk']" ]] || fail "json kinds: $(cat "$work/out")"
fsck --min-age 0 --repair
expect_rc 0 "repair"
expect_out '^repaired +orphan-chunk: c\.300\.99\.0: .*removed' "repair of the orphan chunk"
expect_out '^clean after 2 repairs$' "repair summary"
if "$tierfs" object stat "${store[@]}" c.300.99.0 > /dev/null 2>&1; then
  fail "the orphan chunk is still there"
fi
fsck --min-age 0
expect_rc 0 "after repair"
echo "ok: --repair removes old orphans and a second check is clean"

# Objects that are not the volume's are never touched.
printf 'x' | "$tierfs" object put "${store[@]}" notes.txt
fsck --min-age 0 --repair
expect_rc 0 "foreign object"
expect_out '^note +foreign-object: notes\.txt' "foreign object"
"$tierfs" object stat "${store[@]}" notes.txt > /dev/null || fail "a foreign object was removed"
echo "ok: foreign objects are kept"

# What repair cannot fix stays a problem: exit 1 after --repair too.
"$tierfs" object rm "${store[@]}" d.1
fsck --repair
expect_rc 1 "missing root"
expect_out '^not-repaired +missing-dir-object: d\.1 \(/\): the root directory object is missing' \
  "missing root"
expect_out '^1 problem\(s\) remain, 0 repaired' "summary after repair"
echo "ok: unrepairable damage exits 1"

fsck --min-age soon
expect_rc 2 "bad duration"
grep -q -- "--min-age" "$work/err" || fail "bad duration: $(cat "$work/err")"
fsck --no-such-flag
expect_rc 2 "unknown flag"
set +e
"$tierfs" fsck --backend dir --path "$work/none" > /dev/null 2> "$work/err"
rc=$?
set -e
expect_rc 1 "missing store"
grep -q "^tierfs fsck: NotFound" "$work/err" || fail "missing store: $(cat "$work/err")"
[[ ! -e $work/none ]] || fail "fsck created a store"
echo "ok: errors"
echo "cli_fsck: all checks passed"
