#!/usr/bin/env python3
"""Where the machine's CPU goes while one command runs: every process, and the command itself.

On these 2-core machines the OSD, the tierfs daemon and the readers share the cores, so a
benchmark's speed is often a matter of CPU per byte or per file. This runs COMMAND and prints the
CPU time each process spent meanwhile (from /proc/PID/task/*/stat before and after; threads
summed by process), the command's own (its rusage, children included: processes that exit are
gone from /proc), and the machine's split (/proc/stat: user, system, softirq, idle, iowait), all
divided by --per (bytes or files the command moved) when given.

Usage: tests/bench/cpu_account.py [--per N] [--unit us/file] [--top 8] [--threads PID] -- COMMAND...
  --threads PID   also split that process's CPU by thread name (the daemon's FUSE, messenger,
                  codec threads), with its context switches per unit.
"""
import argparse
import collections
import os
import resource
import subprocess
import sys
import time

TICK = os.sysconf('SC_CLK_TCK')


def task_times():
    """{tid: (pid, process name, thread name, cpu ticks, voluntary, involuntary switches)}."""
    out = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/comm') as f:
                pname = f.read().strip()
            for tid in os.listdir(f'/proc/{pid}/task'):
                with open(f'/proc/{pid}/task/{tid}/stat') as f:
                    stat = f.read()
                fields = stat[stat.rindex(')') + 2:].split()
                tname = stat[stat.index('(') + 1:stat.rindex(')')]
                switches = [0, 0]
                with open(f'/proc/{pid}/task/{tid}/status') as f:
                    for line in f:
                        if line.startswith('voluntary_ctxt_switches'):
                            switches[0] = int(line.split()[1])
                        elif line.startswith('nonvoluntary_ctxt_switches'):
                            switches[1] = int(line.split()[1])
                out[tid] = (pid, pname, tname, int(fields[11]) + int(fields[12]), *switches)
        except (OSError, ValueError):
            pass  # gone meanwhile
    return out


def machine_times():
    with open('/proc/stat') as f:
        user, nice, system, idle, iowait, irq, softirq = map(int, f.readline().split()[1:8])
    return {'user': user + nice, 'system': system, 'softirq': softirq + irq, 'idle': idle,
            'iowait': iowait}


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument('--per', type=float, default=0, help='divide by this many units')
    ap.add_argument('--unit', default='', help='what --per counts, for the labels')
    ap.add_argument('--top', type=int, default=8)
    ap.add_argument('--threads', default='', help='split this PID by thread name')
    ap.add_argument('command', nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    if not command:
        ap.error('no command given')

    # Children waited for before (a python3 launcher's own helpers) are in RUSAGE_CHILDREN too.
    own0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, machine0, start = task_times(), machine_times(), time.monotonic()
    rc = subprocess.call(command)
    after, machine1, seconds = task_times(), machine_times(), time.monotonic() - start
    own1 = resource.getrusage(resource.RUSAGE_CHILDREN)

    scale = (1e6 / TICK / args.per) if args.per else (1000 / TICK)
    unit = f'us/{args.unit or "unit"}' if args.per else 'ms'
    print(f'{" ".join(command)}: exit {rc}, {seconds:.2f} s')
    split = {k: (machine1[k] - machine0[k]) * scale for k in machine0}
    print(f'  machine ({unit}): ' + ', '.join(f'{k} {v:.0f}' for k, v in split.items()))
    command_ticks = (own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime) * TICK
    print(f'  the command and its children ({unit}): {command_ticks * scale:.0f}')
    by_process = collections.Counter()
    names = {}
    for tid, (pid, pname, _tname, ticks, _v, _n) in after.items():
        spent = ticks - before.get(tid, (0, '', '', 0, 0, 0))[3]
        if spent > 0 and pid != str(os.getpid()):
            by_process[pid] += spent
            names[pid] = pname
    for pid, ticks in by_process.most_common(args.top):
        print(f'  {ticks * scale:8.0f} {unit}  {names[pid]} ({pid})')
    if args.threads:
        split_threads(before, after, args.threads, scale, unit, args.per)
    return rc


def split_threads(before, after, pid, scale, unit, per):
    ticks, voluntary, involuntary, count = (collections.Counter() for _ in range(4))
    for tid, (tpid, _pname, tname, t, v, n) in after.items():
        if tpid != pid:
            continue
        _, _, _, t0, v0, n0 = before.get(tid, (pid, '', tname, 0, 0, 0))
        ticks[tname] += t - t0
        voluntary[tname] += v - v0
        involuntary[tname] += n - n0
        count[tname] += 1
    per = per or 1
    print(f'  threads of {pid} ({unit}; context switches per unit, voluntary + involuntary):')
    for tname, t in ticks.most_common():
        if t or voluntary[tname]:
            print(f'    {t * scale:8.0f}  {tname} x{count[tname]}: '
                  f'{voluntary[tname] / per:.2f} + {involuntary[tname] / per:.2f}')


if __name__ == '__main__':
    sys.exit(main())
