#!/usr/bin/env bash
# The whole test suite, from a clean checkout on Debian 12: installs what is missing, then
#   1. a normal build and every test, whatever its label: unit tests, CLI tests on a dir-backend
#      volume, the Ceph tests against a real single-node cluster that ctest starts and stops
#      (deploy/dev-cluster), and the mount tests (real FUSE mounts of tierfs over the dir back end
#      and over that cluster: POSIX suite, model-based test, two mounts, crashes, back-end and
#      cache faults, security, load);
#   2. clang with AddressSanitizer + UndefinedBehaviorSanitizer: the unit tests, then the
#      libFuzzer targets of every decoder, each for a bounded time (docs/FUZZING.md);
#   3. ThreadSanitizer: the multi-threaded unit tests and the mount tests of concurrent work.
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
  # Unity mode compiles eight sources as one: their shared headers (gtest, CLI11, fmt, the
  # project's own) are parsed and their inline code emitted once, not eight times; four test
  # files took 30 s so against 54 s one by one. A CI build is never rebuilt file by file.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt -g1 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON "$@" > /dev/null
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
# The load test's readers and writers run 30 s here (60 s by default, the figures of
# docs/RELIABILITY.md): the same work, and half a minute less of a suite that shares 2 cores.
(cd build && TIERFS_LOAD_SECONDS=30 ctest --output-on-failure --timeout 1200 -j "$jobs")
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

# TSan is for threads: it runs the unit tests that start them (not the single-threaded decoder,
# codec and curve tests: 2.5 CPU-minutes under it, nothing for it to find) and the mount tests
# where many threads meet: 64 readers and 8 writers on one daemon with a cache device (the load
# test, 20 s, a directory of 20,000 entries, memory figures printed only: TSan's shadow memory is
# no measure), two daemons rewriting and reading one file, the cache device under kill -9 and
# restart, warm-ups, sweeps and hints beside readers. The other mount tests (POSIX suites, kills
# and faults, permissions, metrics, systemd) check behaviour that the normal build covers; under
# TSan they took 6 more CPU-minutes.
build build-tsan -O1 -DTIERFS_TSAN=ON
cmake --build build-tsan -j "$jobs" --target tierfs tierfs_unit_tests tierfs_test_populate
tsan_options="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
tsan_single_threaded='^(ChunkCodec|ShardsCurve|FormatTest|FormatFuzzTest|EncodingTest)\.|ChunkCodecRoundTrip|ObjectOf64MiB'
tsan_mount_tests='fuse_load|fuse_two_mounts|fuse_cache_device|fuse_control_warm'
(cd build-tsan && TSAN_OPTIONS=$tsan_options TIERFS_LOAD_SECONDS=20 TIERFS_LOAD_ENTRIES=20000 \
  TIERFS_LOAD_MEMORY_CHECKS=0 ctest --output-on-failure --timeout 1200 -j "$jobs" \
  -L 'unit|fuse' -E "$tsan_single_threaded" -R "^[A-Z]|^($tsan_mount_tests)\$")
stage_done "ThreadSanitizer"
echo "tests/run.sh: all suites passed in $(( $(date +%s) - start )) s"
