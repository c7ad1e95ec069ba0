#!/usr/bin/env python3
"""Runs one command as a user would, stdout to a file, and prints its cost.

    python3 bench/timeit.py NAME OUT -- CMD [ARGS...]

prints one line, `NAME wall=<seconds> cpu=<user+system seconds> rc=<exit status>`,
the wall time from start to exit and the CPU time of the command and its
children (resource.getrusage), so a ratio can be read off either: wall on
a quiet machine, cpu when other work shares the cores.
"""
import resource
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.stderr.write(__doc__)
        sys.exit(2)
    name, out = sys.argv[1], sys.argv[2]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(out, "wb") as f:
        rc = subprocess.call(sys.argv[4:], stdout=f, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print("%s wall=%.3f cpu=%.3f rc=%d" % (name, wall, cpu, rc))


if __name__ == "__main__":
    main()
