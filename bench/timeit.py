#!/usr/bin/env python3
"""Runs one command as a user would, stdout to a file, and prints its cost.

    python3 bench/timeit.py [--runs N] NAME OUT -- CMD [ARGS...]

prints one line, `NAME wall=<seconds> cpu=<user+system seconds> rc=<exit status>`,
the wall time from start to exit and the CPU time of the command and its
children (resource.getrusage), so a ratio can be read off either: wall on
a quiet machine, cpu when other work shares the cores.  With --runs N the
command runs N times and the line gives the least wall and the least cpu
of the N (on a shared machine other work only ever adds time, so the least
is the best estimate of the command's own cost; make bench gives every
row, peers included, the same N), and the first run's exit status.
"""
import resource
import subprocess
import sys
import time


def run_once(out, cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(out, "wb") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc


def main():
    args = sys.argv[1:]
    runs = 1
    if len(args) >= 2 and args[0] == "--runs":
        try:
            runs = int(args[1])
        except ValueError:
            runs = 0
        args = args[2:]
    if runs < 1 or len(args) < 4 or args[2] != "--":
        sys.stderr.write(__doc__)
        sys.exit(2)
    name, out, cmd = args[0], args[1], args[3:]
    results = [run_once(out, cmd) for _ in range(runs)]
    wall = min(r[0] for r in results)
    cpu = min(r[1] for r in results)
    print("%s wall=%.3f cpu=%.3f rc=%d" % (name, wall, cpu, results[0][2]))


if __name__ == "__main__":
    main()
