#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a bounded time (docs/FUZZING.md).
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]   # fuzz; exit 1 on any finding
#   tests/fuzz/run.sh --seeds BUILD_DIR                          # regenerate tests/fuzz/corpus
#
# BUILD_DIR is configured with -DTIERFS_FUZZ=ON under clang and built with
# `cmake --build BUILD_DIR --target tierfs_fuzz_all`. Each target runs over a copy of its seed
# corpus in a scratch directory (new inputs never go into the repository), two targets at a time
# (FUZZ_JOBS=N to change it). A crash, leak, timeout or out-of-memory input is kept in
# BUILD_DIR/fuzz-artifacts/<target>/ and its path printed; reproduce it with
#   BUILD_DIR/tests/fuzz/tierfs_fuzz_<target> PATH
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
all_targets=(volume inode intent chunk control_request control_reply region_record config)

# Inputs longer than this are not tried: every record, frame and config a test needs fits, and
# short inputs keep the runs fast. The intent embeds two inodes.
max_len() {
  case $1 in
    volume) echo 256 ;;
    intent) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

if [[ ${1:-} == --seeds ]]; then
  build=${2:?usage: run.sh --seeds BUILD_DIR}
  rm -rf "$here/corpus"
  "$build/tests/fuzz/tierfs_fuzz_seeds" "$here/corpus"
  cp "$repo/deploy/tierfs.toml" "$here/corpus/config/deploy-tierfs.toml"
  du -sh --apparent-size "$here/corpus"
  exit 0
fi

if [[ $# -lt 2 ]]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
shift 2
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
jobs=${FUZZ_JOBS:-2}

work=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz-artifacts

# Runs one target; its log is $work/<target>.log, its exit code $work/<target>.rc.
run_one() {
  local name=$1 bin=$build/tests/fuzz/tierfs_fuzz_$1
  local corpus=$work/$name/corpus dict=$here/dict/$name.dict
  mkdir -p "$corpus" "$artifacts/$name"
  cp "$here/corpus/$name/"* "$corpus/"
  local args=(-max_total_time="$seconds" -max_len="$(max_len "$name")" -timeout=10
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$name/")
  [[ -f $dict ]] && args+=(-dict="$dict")
  local rc=0
  # TMPDIR: the config target's private directory goes in the scratch one too, so that even a
  # crashed run (no exit handlers) leaves nothing behind.
  TMPDIR=$work/$name "$bin" "${args[@]}" "$corpus" >"$work/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$name.rc"
}

for name in "${targets[@]}"; do
  if [[ ! -x $build/tests/fuzz/tierfs_fuzz_$name ]]; then
    echo "run.sh: $build/tests/fuzz/tierfs_fuzz_$name is missing:" \
      "cmake --build $build --target tierfs_fuzz_all" >&2
    exit 2
  fi
done

echo "fuzzing ${#targets[@]} targets for ${seconds}s each, $jobs at a time"
running=0
for name in "${targets[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
printf '\n%-16s %12s %8s %10s %8s  %s\n' target executions seconds exec/s corpus result
for name in "${targets[@]}"; do
  log=$work/$name.log
  rc=$(cat "$work/$name.rc" 2>/dev/null || echo 1)
  # libFuzzer's last line: "Done 123456 runs in 20 second(s)".
  read -r runs secs < <(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' "$log" |
    tail -1) || true
  runs=${runs:-0}
  secs=${secs:-0}
  rate=$([[ $secs -gt 0 ]] && echo $((runs / secs)) || echo 0)
  units=$(ls "$work/$name/corpus" | wc -l)
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
  if [[ $rc -eq 0 && -z $artifact ]]; then
    result=ok
  else
    result="FAILED (exit $rc)"
    failed=1
  fi
  printf '%-16s %12s %8s %10s %8s  %s\n' "$name" "$runs" "$secs" "$rate" "$units" "$result"
  if [[ $result != ok ]]; then
    kept=$artifacts/$name/$name.log
    cp "$log" "$kept"
    echo "  log: $kept"
    [[ -n $artifact ]] && echo "  input: $artifact" \
      "(reproduce: $build/tests/fuzz/tierfs_fuzz_$name $artifact)"
  fi
done
if [[ $failed -ne 0 ]]; then
  echo "run.sh: a target failed; its input and log are above"
  exit 1
fi
echo "run.sh: every target ran clean"
