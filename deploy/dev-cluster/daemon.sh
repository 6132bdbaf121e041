#!/usr/bin/env bash
# Stop, kill, pause, resume or (re)start one daemon of a cluster made by
# start.sh DIR, for fault tests: a hung OSD is a paused one (SIGSTOP), a dead
# one is killed, and either comes back without touching the rest. Like stop.sh
# it only signals a pid from DIR/run/NAME.pid whose /proc/PID/cmdline is a
# ceph daemon started with -c DIR/ceph.conf. See README.md next to this script.
#
# Usage: daemon.sh DIR stop|kill|pause|resume|start|status NAME   (NAME: osd.N, mon.a)
set -euo pipefail

readonly MARKER=".tierfs-dev-cluster"   # written by start.sh
readonly TERM_WAIT_SECS=20               # SIGTERM, then SIGKILL
readonly START_WAIT_SECS=60              # a restarted daemon's foreground part returns

unset CEPH_ARGS CEPH_CONF CEPH_KEYRING

usage() {
    cat <<'EOF'
Usage: daemon.sh DIR ACTION NAME

One daemon (NAME: osd.N, mon.a, mgr.x, mds.a) of the cluster in DIR:
  stop     SIGTERM, up to 20 s, then SIGKILL (a paused daemon is resumed first)
  kill     SIGKILL (a crash: a memstore OSD loses its data)
  pause    SIGSTOP (a hung daemon: its connections stay open, nothing answers)
  resume   SIGCONT
  start    start it again (it must not be running); returns once it runs
  status   print running, paused or stopped
Exit 0 on success, 1 on failure, 2 on bad arguments.
EOF
}

usage_error() { echo "daemon.sh: $*" >&2; echo >&2; usage >&2; exit 2; }

[[ $# -eq 3 ]] || usage_error "expected DIR ACTION NAME"
DIR="$1" ACTION="$2" NAME="$3"
case "$ACTION" in stop|kill|pause|resume|start|status) ;; *) usage_error "unknown action '$ACTION'" ;; esac
[[ "$NAME" =~ ^(osd\.[0-9]+|mon\.[a-z]+|mgr\.[a-z]+|mds\.[a-z]+)$ ]] || usage_error "bad daemon name '$NAME'"
[[ -d "$DIR" && -e "$DIR/$MARKER" ]] || { echo "daemon.sh: $DIR is not a cluster made by start.sh" >&2; exit 1; }
DIR="$(cd -- "$DIR" && pwd -P)"
readonly CONF="$DIR/ceph.conf" PIDFILE="$DIR/run/$NAME.pid"
TYPE="${NAME%%.*}" ID="${NAME#*.}"

# The pid of NAME if it is alive (a zombie has an empty cmdline: dead).
live_pid() {
    local pid argv=() prev="" a
    pid="$(cat -- "$PIDFILE" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    mapfile -d "" -t argv 2>/dev/null < "/proc/$pid/cmdline" || return 1
    [[ ${#argv[@]} -gt 0 && "${argv[0]##*/}" == "ceph-$TYPE" ]] || return 1
    for a in "${argv[@]}"; do
        if [[ "$prev" == "-c" && "$a" == "$CONF" ]]; then echo "$pid"; return 0; fi
        prev="$a"
    done
    return 1
}

# Process state letter from /proc/PID/stat (T = stopped).
state_of() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || true; }

wait_gone() {
    local deadline=$(( $(date +%s) + $1 ))
    while live_pid >/dev/null; do
        (( $(date +%s) < deadline )) || return 1
        sleep 0.1
    done
}

pid=""
pid="$(live_pid)" || true
case "$ACTION" in
    status)
        if [[ -z "$pid" ]]; then echo stopped
        elif [[ "$(state_of "$pid")" == T ]]; then echo paused
        else echo running; fi ;;
    pause|resume)
        [[ -n "$pid" ]] || { echo "daemon.sh: $NAME is not running" >&2; exit 1; }
        kill "-$([[ $ACTION == pause ]] && echo STOP || echo CONT)" "$pid" ;;
    kill)
        [[ -n "$pid" ]] || exit 0
        kill -KILL "$pid"
        wait_gone 10 || { echo "daemon.sh: $NAME (pid $pid) survived SIGKILL" >&2; exit 1; } ;;
    stop)
        [[ -n "$pid" ]] || exit 0
        kill -CONT "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$TERM_WAIT_SECS"; then
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone 10 || { echo "daemon.sh: $NAME (pid $pid) survived SIGKILL" >&2; exit 1; }
        fi ;;
    start)
        [[ -z "$pid" ]] || { echo "daemon.sh: $NAME is already running (pid $pid)" >&2; exit 1; }
        [[ -d "$DIR/data/$NAME" ]] || { echo "daemon.sh: $DIR has no $NAME" >&2; exit 1; }
        # As start.sh: detached, stdin from /dev/null, inherited fds closed; the daemon forks
        # into the background and writes its pid file once its foreground part returns.
        (
            for fd in /proc/"$BASHPID"/fd/*; do
                fd="${fd##*/}"
                if (( fd > 2 )); then exec {fd}>&- 2>/dev/null || true; fi
            done
            exec timeout "$START_WAIT_SECS" "ceph-$TYPE" -i "$ID" -c "$CONF" \
                </dev/null >>"$DIR/log/$NAME.startup.log" 2>&1
        ) || { echo "daemon.sh: ceph-$TYPE -i $ID failed to start; see $DIR/log/$NAME.startup.log" >&2; exit 1; }
        for _ in $(seq 100); do live_pid >/dev/null && exit 0; sleep 0.1; done
        echo "daemon.sh: $NAME did not come up; see $DIR/log/$NAME.log" >&2
        exit 1 ;;
esac
