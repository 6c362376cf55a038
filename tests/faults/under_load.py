#!/usr/bin/env python3
"""Runs a command with CPU hogs beside it, one busy process per core, and exits with the command's
status: races between ranks (an exit taken for a death, a wait that gives up too early) show when
the ranks do not have the cores to themselves, as on a busy CI machine.

  under_load.py COMMAND [ARGS...]
"""

import os
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        return subprocess.call(sys.argv[1:])
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


if __name__ == "__main__":
    sys.exit(main())
