#!/usr/bin/env bash
# A real Prometheus server (Debian's) on 127.0.0.1 scrapes a tierfs daemon on the real cluster
# while a workload runs; queries through its HTTP API return the hit, miss and byte counts the
# workload implies (and the daemon's own `tierfs status` agrees). Then every query of the Grafana
# dashboard and of the alert rules is accepted by that server and names only metrics the daemon
# exports, and the alert rules load and pass their unit tests (promtool).
# Usage: metrics_prometheus.sh TIERFS CLUSTER_ENV DEPLOY_DIR
set -euo pipefail
TIERFS=$1 cluster_env=$2 deploy=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mount_lib.sh
source "$here/mount_lib.sh"
setup_mount_test
prom_pid=
cleanup() {
  if [[ -n $prom_pid ]]; then kill "$prom_pid" 2> /dev/null && wait "$prom_pid" 2> /dev/null; fi
  mount_test_cleanup
}
trap cleanup EXIT
ns="metrics-$$"
read -ra flags <<< "$(rados_flags "$cluster_env" "$ns")"

# The rules and their unit tests, offline.
promtool check rules "$deploy/prometheus/tierfs-alerts.yml" > /dev/null
promtool test rules "$deploy/prometheus/tierfs-alerts.test.yml" > "$work/promtool.out" ||
  fail "alert rule tests: $(cat "$work/promtool.out")"

# 24 files of 100,000 random bytes: one chunk each.
files=24 size=100000
mkdir -p "$work/src/data"
for i in $(seq -w 1 $files); do head -c $size /dev/urandom > "$work/src/data/f$i"; done
"$TIERFS" mkfs "${flags[@]}" --chunk-size 1M > /dev/null
"$TIERFS" import "${flags[@]}" "$work/src" / > /dev/null

port=$(free_port)
{
  rados_config "$cluster_env" "$ns"
  printf '[cache]\nmemory_size = "64M"\n[[cache.device]]\npath = "%s"\nsize = "128M"\n' "$work/cache0"
  # No dataset sweep: every chunk read below is a reader's (files of one chunk: no read-ahead).
  printf '[prefetch]\nsweep = false\n'
  printf '[metrics]\nenabled = true\naddress = "127.0.0.1:%s"\n' "$port"
} > "$work/tierfs.toml"
start_tierfs "$mnt" "$work/log" "$work/tierfs.toml"

# Prometheus scrapes every second, with the project's alert rules loaded.
prom_port=$(free_port)
cat > "$work/prometheus.yml" << EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $deploy/prometheus/tierfs-alerts.yml
scrape_configs:
  - job_name: tierfs
    static_configs:
      - targets: ["127.0.0.1:$port"]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$prom_port" > "$work/prom.log" 2>&1 &
prom_pid=$!
api="http://127.0.0.1:$prom_port/api/v1"
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$prom_port/-/ready" > /dev/null && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$prom_port/-/ready" > /dev/null || fail "prometheus did not start: $(tail "$work/prom.log")"

# query EXPR: the value of a one-series instant query ("none" when it has no series).
query() {
  curl -sf "$api/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else ("none" if not r else "many"))'
}
# wait_for EXPR WANT: polls until the query gives WANT (the scrapes catch up), or fails.
wait_for() {
  local got
  for _ in $(seq 60); do
    got=$(query "$1")
    [[ $got == "$2" ]] && return 0
    sleep 0.5
  done
  fail "prometheus: $1 = $got, want $2"
}

# The workload, while Prometheus scrapes: an epoch from the back end, then (the page cache
# dropped) two epochs from the memory cache, a second apart.
read_all() { for f in "$mnt"/data/*; do cat "$f" > /dev/null; done; }
wait_for 'up{job="tierfs"}' 1
wait_for 'tierfs_cache_misses_total' 0
read_all
for _ in 1 2; do
  sleep 1.5
  echo 3 > /proc/sys/vm/drop_caches
  read_all
done

wait_for 'tierfs_cache_misses_total' "$files"
wait_for 'tierfs_cache_hits_total{tier="memory"}' $((2 * files))
wait_for 'tierfs_cache_read_bytes_total{tier="memory"}' $((2 * files * size))
wait_for 'tierfs_cache_hits_total{tier="device"}' 0
# What the back end sent is the stored frames: the data plus a header each (incompressible).
backend_bytes=$(query 'tierfs_cache_read_bytes_total{tier="backend"}')
((backend_bytes >= files * size && backend_bytes < files * (size + 4096))) ||
  fail "back-end bytes $backend_bytes for $files chunks of $size bytes"
reads=$(query 'tierfs_backend_request_duration_seconds_count{op="read"}')
((reads >= files)) || fail "back-end read histogram counted $reads reads, want >= $files"
fuse_reads=$(query 'tierfs_fuse_request_duration_seconds_count{op="read"}')
((fuse_reads >= 3 * files)) || fail "FUSE read histogram counted $fuse_reads, want >= $((3 * files))"
capacity=$(query "tierfs_cache_device_capacity_bytes{device=\"$work/cache0\"}")
((capacity > 64 << 20 && capacity <= 128 << 20)) || fail "device capacity $capacity for 128M"
wait_for 'tierfs_cache_device_up' 1
# The memory cache keeps every file (small chunks, in slabs): at least their bytes, and the
# slabs' overhead bounded (rounding, partly used slabs: docs/CACHE.md).
slabs=$(query 'tierfs_cache_memory_slab_bytes')
echo "small-chunk slabs: $slabs bytes for $files chunks of $size bytes"
((slabs >= files * size && slabs <= 2 * files * size + (4 << 20))) ||
  fail "small-chunk slabs hold $slabs bytes for $files chunks of $size bytes in memory"
# The slabs come from malloc: the allocator's figures (tcmalloc's, or glibc's in a sanitizer
# build) count them, or they are not the allocator the daemon runs on.
in_use=$(query 'tierfs_memory_heap_in_use_bytes')
held=$(query 'tierfs_memory_heap_held_bytes')
echo "malloc: $in_use bytes in use, $held held"
((in_use >= slabs && held >= in_use)) ||
  fail "malloc reports $in_use bytes in use and $held held, with $slabs bytes of slabs"
# Scraped while the workload ran: the miss counter had several distinct values over time.
changes=$(query 'changes(tierfs_cache_hits_total{tier="memory"}[5m])')
((changes >= 1)) || fail "the memory hit counter never changed between scrapes ($changes)"

# The daemon's own account agrees with what Prometheus stored.
python3 - "$("$TIERFS" status --json "$mnt")" "$files" << 'PY'
import json, sys
s = json.loads(sys.argv[1])
files = int(sys.argv[2])
assert s['hits'] == 2 * files and s['misses'] == files, s
print(f"tierfs status: {s['hits']} hits, {s['misses']} misses: as Prometheus says")
PY

# Every expression of the dashboard and the alert rules: accepted by the server, and naming
# only metrics the daemon exports.
curl -sf "http://127.0.0.1:$port/metrics" > "$work/scrape.txt"
python3 - "$deploy" "$work/scrape.txt" "$api" << 'PY'
import json, re, sys, urllib.parse, urllib.request
deploy, scrape, api = sys.argv[1:]
exported = set(re.findall(r'^# TYPE (\w+)', open(scrape).read(), re.M))
exprs = []
for p in json.load(open(f'{deploy}/grafana/tierfs.json'))['panels']:
    exprs += [(p['title'], t['expr']) for t in p['targets']]
rules = open(f'{deploy}/prometheus/tierfs-alerts.yml').read()
for m in re.finditer(r'- alert: (\w+)\n\s+(?:#.*\n\s+)*expr: (\|\n(?:\s{10}.*\n)+|.*\n)', rules):
    exprs.append((m.group(1), m.group(2).lstrip('|')))
assert len(exprs) >= 20, f'only {len(exprs)} expressions found'
for title, e in exprs:
    e = e.replace('$__rate_interval', '1m').replace('$instance', '.*')
    for name in set(re.findall(r'\b(tierfs_\w+)', e)):
        base = re.sub(r'_(bucket|count|sum)$', '', name)
        assert base in exported, f'{title}: {name} is not a metric the daemon exports'
    url = f'{api}/query?' + urllib.parse.urlencode({'query': e})
    r = json.load(urllib.request.urlopen(url))
    assert r['status'] == 'success', f'{title}: prometheus refused {e}: {r}'
print(f'{len(exprs)} dashboard and alert expressions: valid, on exported metrics')
PY

stop_tierfs "$mnt" "$work/log"
echo "metrics_prometheus: passed"
