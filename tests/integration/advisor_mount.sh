#!/usr/bin/env bash
# The sizing advisor under a real mount (dir back end): a skewed random workload over a few
# hundred small files, several times the memory cache, read with O_DIRECT so that every read
# reaches the daemon; then the hit ratio `tierfs advise` predicts for the configured cache is
# within 0.05 of the one `tierfs status` measured over the same reads. The trace the daemon
# recorded replays offline (`tierfs advise --trace`, sampled and --exact) to the same answer, and
# a damaged trace line is named by file:line.
#
# Apples to apples: the memory chunk cache is LRU by raw bytes, which is what the advisor models.
# Each file is one chunk of 40-100 KB read by one FUSE request, so the daemon's read-ahead has
# nothing to fetch ahead and the single reader never joins a fetch under way: the cache's hit
# and miss counters count exactly the demand accesses the advisor sees.
# Usage: advisor_mount.sh TIERFS
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
cache_bytes=$((12 << 20))

python3 - "$work/src" << 'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(6)
for d in ('train', 'val'):
    os.makedirs(f'{root}/{d}')
for i in range(600):
    d = 'train' if i % 4 else 'val'
    open(f'{root}/{d}/f{i:04d}', 'wb').write(os.urandom(rng.randrange(40_000, 100_000)))
PY
"$TIERFS" mkfs --backend dir --path "$work/store" > /dev/null
"$TIERFS" import --backend dir --path "$work/store" "$work/src" / > /dev/null
cat > "$work/tierfs.toml" << CONFIG
[backend]
type = "dir"
[backend.dir]
path = "$work/store"
[cache]
memory_size = "12M"
[advisor]
enabled = true
sample_rate = 1.0
max_samples = 8192
trace_file = "$work/trace"
CONFIG

start_tierfs "$mnt" "$work/log" "$work/tierfs.toml"
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
before=$("$TIERFS" status --json "$mnt")

# Six epochs of 600 reads each, files drawn with Zipf-like weights (with replacement).
python3 - "$mnt" << 'PY'
import mmap, os, random, sys
root = sys.argv[1]
files = sorted(f'{root}/{d}/{n}' for d in ('train', 'val') for n in os.listdir(f'{root}/{d}'))
rng = random.Random(7)
rng.shuffle(files)
weights = [1 / (i + 1) ** 0.9 for i in range(len(files))]
buf = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT wants
for epoch in range(6):
    for path in rng.choices(files, weights, k=len(files)):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        try:
            n = os.readv(fd, [buf])
            assert n == os.fstat(fd).st_size, (path, n)
        finally:
            os.close(fd)
PY

after=$("$TIERFS" status --json "$mnt")
measured=$(
  python3 - "$before" "$after" << 'PY'
import json, sys
b, a = (json.loads(s) for s in sys.argv[1:3])
hits, misses = a['hits'] - b['hits'], a['misses'] - b['misses']
assert hits + misses >= 3600, (hits, misses)
print(hits / (hits + misses))
PY
)
advice=$("$TIERFS" advise --json "$mnt")
predicted=$(echo "$advice" | json "d['curves'][0]['configured_hit_ratio']")
configured=$(echo "$advice" | json "d['configured_bytes']")
[[ $configured == "$cache_bytes" ]] ||
  fail "advise judged $configured bytes, not the $cache_bytes configured"
echo "measured hit ratio $measured, predicted $predicted"
python3 -c "import sys; m, p = map(float, sys.argv[1:]); sys.exit(abs(m - p) > 0.05)" \
  "$measured" "$predicted" || fail "predicted $predicted, measured $measured: more than 0.05 apart"
# One curve per top-level directory, and a table for people.
[[ $(echo "$advice" | json "sorted(c['dataset'] for c in d['curves'])") == "['', 'train', 'val']" ]] ||
  fail "curves: $advice"
"$TIERFS" advise "$mnt" --dataset train --target 0.5 | tee "$work/table"
grep -q "smallest size reaching 50.0%" "$work/table" || fail "no size for the target in the table"

stop_tierfs "$mnt" "$work/log" || fail "the daemon failed"
lines=$(grep -c . "$work/trace")
((lines >= 3600)) || fail "the trace holds $lines accesses"
hit() { echo "$1" | json "d['curves'][0]['points'][0]['hit_ratio']"; }
# Every file sampled (the accuracy of sampling is the unit tests' business: a few hundred files
# are too few to sample from), so the SHARDS replay must agree with the exact one.
sampled=$(hit "$("$TIERFS" advise --json --trace "$work/trace" --sizes 12M --sample-rate 1 \
  --max-samples 8192)")
exact=$(hit "$("$TIERFS" advise --json --trace "$work/trace" --sizes 12M --exact)")
echo "offline at 12M: SHARDS at rate 1 $sampled, exact $exact"
python3 -c "import sys; s, e, m = map(float, sys.argv[1:]); sys.exit(abs(s - e) > 0.01 or abs(e - m) > 0.05)" \
  "$sampled" "$exact" "$measured" || fail "the offline replays disagree"

sed -i '5s/ [0-9]* / 12x /' "$work/trace"
if "$TIERFS" advise --trace "$work/trace" 2> "$work/err"; then fail "a damaged trace replayed"; fi
grep -qF "$work/trace:5: size \"12x\"" "$work/err" ||
  fail "the error does not name the line: $(cat "$work/err")"
echo "advisor_mount: ok"
