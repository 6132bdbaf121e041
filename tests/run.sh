#!/usr/bin/env bash
# The whole test suite, from a clean checkout on Debian 12: installs what is missing, builds
# twice (a normal build, and one with AddressSanitizer + UndefinedBehaviorSanitizer), then runs
#   - every test of the normal build, whatever its label: unit tests, CLI tests on a dir-backend
#     volume, the Ceph tests against a real single-node cluster that ctest starts and stops
#     (deploy/dev-cluster), and the mount tests (real FUSE mounts of tierfs over the dir back end
#     and over that cluster: POSIX suite, model-based test, two mounts of one volume, kill -9),
#   - the same again in the sanitizer build (its own cluster, one after the other).
# Usage: tests/run.sh [--quick]   (--quick: skip the sanitizer build)
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
build build -O2
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure --timeout 1200 -j "$jobs")
if [[ $quick == 0 ]]; then
  # The sanitizer build is the suite's longest step: -O1 (what the sanitizers' documentation
  # advises) compiles faster than -O2, and only what its tests run is built.
  build build-asan -O1 -DTIERFS_SANITIZE=ON
  cmake --build build-asan -j "$jobs" --target tierfs tierfs_unit_tests \
    $(grep -q 'tierfs_ceph_tests' build-asan/build.ninja && echo tierfs_ceph_tests)
  # The mount tests write a 2 GiB file in the normal build; 512 MiB is enough to exercise the
  # same paths under the sanitizers, which run several times slower. The POSIX suite runs there
  # once, over the cluster: over the dir back end it checks the same daemon code, and takes ~8
  # minutes (every dir-store update is fsynced), which the normal build spends already.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    TIERFS_BIG_SIZE=512M ctest --output-on-failure --timeout 1200 -j "$jobs" -E '^fuse_posix_dir$')
fi
echo "tests/run.sh: all suites passed in $(( $(date +%s) - start )) s"
