# shellcheck shell=bash
# Shared by the bench scripts that run on a fresh dev cluster of their own. Source it from the
# repository's top directory.

# bench_cluster PREFIX NAMESPACE: a work directory /var/tmp/PREFIX-XXXXXX ($work) with a mount
# point ($mnt) and a fresh BlueStore dev cluster in it; sources its client.env and puts the
# back-end flags for NAMESPACE in $flags. At exit: the mount unmounted, the daemon whose PID is in
# $daemon (set it when you start one) waited for, the cluster purged and $work removed.
bench_cluster() {
  work=$(mktemp -d "/var/tmp/$1-XXXXXX")
  mnt=$work/mnt
  daemon=
  trap bench_cleanup EXIT
  mkdir -p "$mnt"
  deploy/dev-cluster/start.sh --bluestore --osd-size 40G "$work/cluster" > /dev/null
  # shellcheck disable=SC1091
  source "$work/cluster/client.env"
  # shellcheck disable=SC2034  # for the script that sources this
  flags=(--backend rados --conf "$TIERFS_CEPH_CONF" --keyring "$TIERFS_CEPH_KEYRING"
         --user "$TIERFS_CEPH_USER" --pool "$TIERFS_CEPH_POOL" --namespace "$2")
}
bench_cleanup() {
  if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" || true; fi
  if [[ -n $daemon ]]; then wait "$daemon" || true; fi
  deploy/dev-cluster/stop.sh --purge "$work/cluster" > /dev/null || true
  rm -rf "$work"
}

# proc_field N PID: field N of /proc/PID/stat (10: minor faults, 14 and 15: CPU ticks).
proc_field() {
  awk -v n="$1" '{print $n}' "/proc/$2/stat"
}

drop_page_cache() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
}

# abba_order ROUND THIS [OTHER]: the binaries of one round in $order, THIS first in odd rounds
# and OTHER first in even ones (ABBA), so that a drift of the machine weighs on both alike.
# shellcheck disable=SC2034  # $order is for the script that sources this
abba_order() {
  order=("$2")
  if [[ -n ${3:-} ]]; then
    if (($1 % 2)); then order=("$2" "$3"); else order=("$3" "$2"); fi
  fi
}
