# shellcheck shell=bash
# Helpers shared by the dev-cluster scripts (sourced; defines functions only).

# True if a file system of type $2 (any type if empty) is mounted at $1.
mounted_at() {
    awk -v m="$1" -v t="${2:-}" '
        { for (i = 7; i <= NF && $i != "-"; i++) ; }
        $5 == m && (t == "" || $(i + 1) == t) { found = 1 }
        END { exit !found }' /proc/self/mountinfo
}

# Program name of process $1 (empty while it is in execve, or a zombie).
argv0() { local a=""; IFS= read -r -d "" a < "/proc/$1/cmdline" 2>/dev/null || true; echo "${a##*/}"; }

# State letter of process $1 from /proc/PID/stat (Z: zombie); "gone" if reaped.
proc_state() {
    local s
    s="$(cat "/proc/$1/stat" 2>/dev/null)" || { echo gone; return; }
    s="${s##*) }"
    echo "${s%% *}"
}

# A size with an optional K/M/G/T suffix (binary units) in bytes.
to_bytes() {
    local n="${1%[KMGT]}" unit="${1##*[0-9]}"
    case "$unit" in
        K) echo $(( n << 10 )) ;; M) echo $(( n << 20 )) ;;
        G) echo $(( n << 30 )) ;; T) echo $(( n << 40 )) ;; *) echo "$n" ;;
    esac
}

# Prints the tails of the logs named (a startup log 15 lines, others 5) to stderr, for a
# script that failed to mount.
tail_logs() {
    local f
    for f in "$@"; do
        [[ -s "$f" ]] || continue
        echo "----- tail of $f" >&2
        tail -n "$( [[ "$f" == *startup* ]] && echo 15 || echo 5 )" -- "$f" >&2
    done
}

# Stops our own child $1 (not yet reaped, so its pid is not reused): SIGTERM, then SIGKILL
# after $2 seconds, giving up $3 seconds later.
stop_child() {
    local i
    kill -TERM "$1" 2>/dev/null || true
    for (( i = 0; i < ($2 + $3) * 10; i++ )); do
        case "$(proc_state "$1")" in gone|Z|X) break ;; esac
        (( i != $2 * 10 )) || kill -KILL "$1" 2>/dev/null || true
        sleep 0.1
    done
}
