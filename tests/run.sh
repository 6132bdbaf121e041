#!/usr/bin/env bash
# The whole test suite, from a clean checkout on Debian 12: installs what is missing, builds
# twice (a normal build, and one with AddressSanitizer + UndefinedBehaviorSanitizer), then runs
#   - every test of the normal build, whatever its label: unit tests, CLI tests on a dir-backend
#     volume, and the Ceph tests against a real single-node cluster that ctest starts and stops
#     (deploy/dev-cluster),
#   - the same again in the sanitizer build (its own cluster, one after the other).
# Usage: tests/run.sh [--quick]   (--quick: skip the sanitizer build)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ ${1:-} == --quick ]] && quick=1

deploy/install-deps.sh
jobs=$(nproc)

build() {  # build DIR [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" > /dev/null
  cmake --build "$dir" -j "$jobs"
}

start=$(date +%s)
build build
(cd build && ctest --output-on-failure --timeout 600 -j "$jobs")
if [[ $quick == 0 ]]; then
  build build-asan -DTIERFS_SANITIZE=ON
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure --timeout 600 -j "$jobs")
fi
echo "tests/run.sh: all suites passed in $(( $(date +%s) - start )) s"
