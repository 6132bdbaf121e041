#!/usr/bin/env bash
# Epochs over a dataset 1.5x the cache device, through a real mount over the real cluster: each
# epoch reads every file once in a fresh shuffled order (page cache dropped, no memory tier), as
# a DataLoader's sampler does. Prints the epoch hit ratios for LRU and for the training policy, and checks
# that training keeps at least 90% of cache/dataset from epoch 2 on.
# Usage: cache_epochs.sh TIERFS CLUSTER_ENV
set -euo pipefail
TIERFS=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
mkdir "$work/src"
read -ra flags <<< "$(rados_flags "$2" "epochs-$$")"

# The device: 64 MiB, of which the index keeps 16 MiB: 48 regions of 1 MiB, 9 files a region
# (entries of ~100 KB and their headers): 432 files fit. The dataset: 648 files, 1.5x that.
files=648
python3 - "$work/src" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = f'{root}/class{i % 8}'
    os.makedirs(d, exist_ok=True)
    open(f'{d}/f{i:04d}.jpg', 'wb').write(os.urandom(110_000))
PY
"$TIERFS" mkfs "${flags[@]}" > /dev/null
"$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null

# epochs POLICY ENV: three epochs; prints "ratio1 ratio2 ratio3": the share of files read without
# a back-end read.
epochs() {
  local policy=$1
  rm -rf "$work/cache0" "$work/cache0.index"
  rados_config "$2" "epochs-$$" > "$work/tierfs.toml"
  cat >> "$work/tierfs.toml" << EOF
[cache]
memory_size = "0"
region_size = "1M"
eviction = "$policy"
[[cache.device]]
path = "$work/cache0"
size = "64M"
EOF
  start_tierfs "$mnt" "$work/log-$policy" --read-only "$work/tierfs.toml"
  python3 - "$mnt" <<'PY'
import json, os, random, sys
mnt = sys.argv[1]
paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(mnt) for f in fs)
def backend_reads():
    return json.loads(os.getxattr(mnt, 'user.tierfs.cache_stats'))['backend_reads']
rng = random.Random(11)
ratios = []
for epoch in range(3):
    os.sync()
    open('/proc/sys/vm/drop_caches', 'w').write('3\n')
    rng.shuffle(paths)
    hits = 0
    for p in paths:  # one reader, so that each file's back-end reads are its own
        before = backend_reads()
        with open(p, 'rb') as f:
            f.read()
        hits += backend_reads() == before
    ratios.append(hits / len(paths))
print(' '.join(f'{r:.3f}' for r in ratios))
PY
  stop_tierfs "$mnt" "$work/log-$policy"
}

lru=$(epochs lru "$2")
training=$(epochs training "$2")
read -r _ t2 t3 <<< "$training"
ideal=$(python3 -c "print(432 / $files)")
echo "epoch hit ratios (cache/dataset $ideal): LRU $lru; training $training"
python3 -c "import sys; sys.exit(0 if min($t2, $t3) >= 0.9 * $ideal else 1)" ||
  fail "training mode kept less than 90% of cache/dataset from epoch 2: $training"
echo "cache epochs: OK"
