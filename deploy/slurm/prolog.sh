#!/usr/bin/env bash
# Slurm Prolog: warms the datasets a job names into this node's tierfs cache before it starts,
# within a time limit, and notes the cache counters so that the Epilog can report the job's hit
# ratio. Install on every node (slurm.conf: Prolog=/usr/lib/tierfs/slurm/prolog.sh, and
# PrologFlags=Alloc so that it runs at allocation, before the job's first step).
#
# What to warm, first found wins:
#   - TIERFS_WARM in the environment: paths separated by ':' or ',' (for a manual run);
#   - the job's comment: `sbatch --comment "tierfs:warm=/mnt/tierfs/ds/train,/mnt/tierfs/ds/val"`
#     (other words of the comment are left alone).
# Settings (environment, or /etc/default/tierfs-slurm): TIERFS_WARM_TIMEOUT (seconds, default
# 1800), TIERFS_BIN (default: tierfs on PATH), TIERFS_JOB_STATE (default /run/tierfs/jobs).
#
# A Prolog that fails drains the node, so this one always exits 0: a warm-up that fails or runs
# out of time is logged (syslog tag tierfs-slurm) and the job starts anyway, reading what is not
# cached from Ceph.
set -uo pipefail
[[ -r /etc/default/tierfs-slurm ]] && source /etc/default/tierfs-slurm
TIERFS_BIN=${TIERFS_BIN:-tierfs}
state=${TIERFS_JOB_STATE:-/run/tierfs/jobs}
job=${SLURM_JOB_ID:-manual}
log() { logger -t tierfs-slurm -- "job $job: $*" 2> /dev/null; echo "tierfs-slurm: job $job: $*" >&2; }

# The job's datasets.
paths=${TIERFS_WARM:-}
if [[ -z $paths && -n ${SLURM_JOB_ID:-} ]] && command -v scontrol > /dev/null; then
  comment=$(scontrol show job -o "$SLURM_JOB_ID" 2> /dev/null | grep -o 'Comment=[^ ]*' | head -1)
  if [[ $comment =~ tierfs:warm=([^[:space:]]+) ]]; then paths=${BASH_REMATCH[1]}; fi
fi

# The counters before the job (after its warm-up: what that fetched is not the job's), for the
# Epilog.
note_counters() {
  mkdir -p "$state" && chmod 700 "$state"
  "$TIERFS_BIN" status --json > "$state/$job.before" 2> /dev/null || rm -f "$state/$job.before"
}
trap note_counters EXIT

[[ -n $paths ]] || exit 0
IFS=',:' read -ra list <<< "$paths"
start=$(date +%s)
if out=$(timeout "${TIERFS_WARM_TIMEOUT:-1800}" "$TIERFS_BIN" warm "${list[@]}" 2>&1 > /dev/null); then
  log "warmed ${list[*]} in $(($(date +%s) - start)) s"
else
  rc=$?
  if [[ $rc == 124 ]]; then
    log "warm-up of ${list[*]} stopped after ${TIERFS_WARM_TIMEOUT:-1800} s (cancelled; the rest comes from Ceph)"
  else
    log "warm-up of ${list[*]} incomplete (exit $rc): $(tail -5 <<< "$out" | tr '\n' ' ')"
  fi
fi
exit 0
