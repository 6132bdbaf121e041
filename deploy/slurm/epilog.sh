#!/usr/bin/env bash
# Slurm Epilog: logs the job's tierfs cache hit ratio on this node (the counters now, less those
# the Prolog noted), one line per mount, to syslog (tag tierfs-slurm) and standard error.
# slurm.conf: Epilog=/usr/lib/tierfs/slurm/epilog.sh. Always exits 0.
set -uo pipefail
[[ -r /etc/default/tierfs-slurm ]] && source /etc/default/tierfs-slurm
TIERFS_BIN=${TIERFS_BIN:-tierfs}
state=${TIERFS_JOB_STATE:-/run/tierfs/jobs}
job=${SLURM_JOB_ID:-manual}
before=$state/$job.before
[[ -r $before ]] || exit 0
after=$("$TIERFS_BIN" status --json 2> /dev/null) || { rm -f "$before"; exit 0; }
python3 - "$before" "$after" "$job" << 'PY' | while read -r line; do
import json, sys
before = {}
for text in open(sys.argv[1]):
    if text.strip():
        m = json.loads(text)
        before[m['mountpoint']] = m
for text in sys.argv[2].splitlines():
    if not text.strip():
        continue
    now = json.loads(text)
    was = before.get(now['mountpoint'], {})
    delta = {k: now[k] - was.get(k, 0) for k in ('hits', 'misses', 'bytes_from_cache', 'bytes_from_backend')}
    reads = delta['hits'] + delta['misses']
    ratio = f"{100.0 * delta['hits'] / reads:.1f}%" if reads else 'n/a'
    print(f"{now['mountpoint']}: hit ratio {ratio} ({delta['hits']} hits, {delta['misses']} misses; "
          f"{delta['bytes_from_cache'] >> 20} MiB from the cache devices, "
          f"{delta['bytes_from_backend'] >> 20} MiB from Ceph)")
PY
  logger -t tierfs-slurm -- "job $job: $line" 2> /dev/null
  echo "tierfs-slurm: job $job: $line" >&2
done
rm -f "$before"
exit 0
