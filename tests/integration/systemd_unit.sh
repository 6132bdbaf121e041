#!/usr/bin/env bash
# deploy/systemd/tierfs@.service passes `systemd-analyze verify` (offline: systemd need not be
# PID 1). verify checks that ExecStart names an executable, so the test verifies a copy of the
# real unit whose only change is the binary's path (the built one instead of /usr/local/bin).
# Usage: systemd_unit.sh TIERFS UNIT_FILE
set -euo pipefail
tierfs=$1
unit=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# verify_instance DIR: verifies DIR/tierfs@ci.service (an instance of DIR/tierfs@.service);
# warnings count as failures. Prints what systemd-analyze said.
verify_instance() {
  ln -sf tierfs@.service "$1/tierfs@ci.service"
  local rc=0
  systemd-analyze verify "$1/tierfs@ci.service" > "$1/verify.out" 2>&1 || rc=$?
  cat "$1/verify.out"
  [[ $rc == 0 && ! -s $1/verify.out ]]
}

grep -q '^ExecStart=/usr/local/bin/tierfs mount -f ' "$unit" ||
  fail "$unit: ExecStart does not run /usr/local/bin/tierfs mount -f"
grep -q '^Type=notify$' "$unit" || fail "$unit: not Type=notify"

mkdir "$work/built"
sed "s|/usr/local/bin/tierfs |$tierfs |" "$unit" > "$work/built/tierfs@.service"
[[ $(grep -c "^ExecStart=$tierfs mount -f " "$work/built/tierfs@.service") == 1 ]] ||
  fail "the ExecStart path was not substituted"
verify_instance "$work/built" || fail "systemd-analyze verify rejects $unit"

# The check can fail: the same unit pointing at a binary that does not exist is rejected.
mkdir "$work/missing"
sed "s|/usr/local/bin/tierfs |$work/no-such-tierfs |" "$unit" > "$work/missing/tierfs@.service"
if verify_instance "$work/missing" > /dev/null; then
  fail "systemd-analyze verify accepted an ExecStart binary that does not exist"
fi
echo "systemd_unit.sh: passed"
