#!/usr/bin/env bash
# The whole test suite, from a clean checkout on Debian 12: installs what is missing, then
#   1. a normal build and every test, whatever its label: unit tests, CLI tests on a dir-backend
#      volume, the Ceph tests against a real single-node cluster that ctest starts and stops
#      (deploy/dev-cluster), and the mount tests (real FUSE mounts of tierfs over the dir back end
#      and over that cluster: POSIX suite, model-based test, two mounts, crashes, back-end and
#      cache faults, security, load);
#   2. clang with AddressSanitizer + UndefinedBehaviorSanitizer: the unit tests, then the
#      libFuzzer targets of every decoder, each for a bounded time (docs/FUZZING.md);
#   3. ThreadSanitizer: the unit tests and the mount tests (their own cluster).
# Each stage prints how long it took. Usage: tests/run.sh [--quick]   (--quick: stage 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ ${1:-} == --quick ]] && quick=1

deploy/install-deps.sh
jobs=$(nproc)

build() {  # build DIR OPTIMISATION [cmake args...]
  local dir=$1 opt=$2
  shift 2
  # -g1 (line tables: what sanitizer reports and backtraces need) builds ~25% faster than -g.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt -g1 -DNDEBUG" "$@" > /dev/null
}

start=$(date +%s)
stage_start=$start
stage_done() {
  local now
  now=$(date +%s)
  echo "tests/run.sh: $1 took $((now - stage_start)) s"
  stage_start=$now
}
build build -O2
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure --timeout 1200 -j "$jobs")
stage_done "the normal build and its tests"
[[ $quick == 1 ]] && exit 0

# -O1 (what the sanitizers' documentation advises) compiles faster than -O2, and only what the
# tests run is built. One clang build serves the unit tests and the fuzz targets (both need ASan
# and UBSan; the fuzz targets also libFuzzer's coverage, harmless to the tests).
build build-asan -O1 -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTIERFS_FUZZ=ON \
  -DTIERFS_WITH_RADOS=OFF
cmake --build build-asan -j "$jobs" --target tierfs_unit_tests tierfs_fuzz_all
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure --timeout 1200 -j "$jobs" -L unit)
tests/fuzz/run.sh build-asan "${TIERFS_FUZZ_SECONDS:-20}"
stage_done "AddressSanitizer and UndefinedBehaviorSanitizer (clang): unit tests and fuzzing"

# The mount tests write a 2 GiB file in the normal build; 512 MiB exercises the same paths. Left
# to the normal build: the POSIX suites (one client at a time: little for TSan to find, and 7 min
# under it) and the tests of kills and faults (crash runs, back-end and cache faults: about
# timing, and 6 min under it). The load test runs shorter: 20 s of 64 readers and 8 writers, a
# directory of 20,000 entries, memory figures printed only (TSan's shadow memory is no measure).
build build-tsan -O1 -DTIERFS_TSAN=ON
cmake --build build-tsan -j "$jobs" --target tierfs tierfs_unit_tests tierfs_test_populate
tsan_options="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
(cd build-tsan && TSAN_OPTIONS=$tsan_options TIERFS_BIG_SIZE=512M TIERFS_LOAD_SECONDS=20 \
  TIERFS_LOAD_ENTRIES=20000 TIERFS_LOAD_MEMORY_CHECKS=0 ctest --output-on-failure --timeout 1200 \
  -j "$jobs" -L 'unit|fuse' \
  -E '^fuse_(posix_dir|posix_rados|crash_runs|backend_faults|cache_faults)$')
stage_done "ThreadSanitizer"
echo "tests/run.sh: all suites passed in $(( $(date +%s) - start )) s"
