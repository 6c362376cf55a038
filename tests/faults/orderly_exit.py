#!/usr/bin/env python3
"""An orderly exit is no death (the soak's CI flake): 4 ranks run seeded all-reduces, then a last
broadcast from rank LEAVER along the ring 0 1 2 3, which the others enter late, each ~100 ms after
the rank that follows it, so that they wait for their predecessors. The leaver's part is done
once its data is sent: it destroys its communicator and exits while the others still wait. Every rank must finish with correct data and exit 0; before departure notes, the ranks
still waiting took the leaver's exit for a death ("rank LEAVER ... is gone").

  orderly_exit.py FAULT_RANK TRANSPORT LEAVER [--seed S]   (FAULT_SEED overrides the seed)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, verdict  # noqa: E402

NRANKS, BOUND_S = 4, 30


def main():
    args, seed, _ = driver_args(["fault_rank", "transport", "leaver"])
    leaver = int(args.leaver)
    name = f"rank {leaver} leaves early over {args.transport}"
    print(f"seed {seed}: {name}")
    job = Job([args.fault_rank, "--kind", "allreduce", "--seed", str(seed), "--ops", "3",
               "--max-bytes", "65536", "--leave-early", str(leaver)], NRANKS,
              env={"TUTTI_TRANSPORT": args.transport, "TUTTI_TIMEOUT": "60",
                   "TUTTI_RING_ORDER": " ".join(map(str, range(NRANKS)))})
    problems = []
    try:
        if not job.wait_all("done", BOUND_S):
            problems.append(f"not every rank finished within {BOUND_S} s")
        if not job.ranks[leaver].find("left"):
            problems.append(f"rank {leaver} did not leave after its part")
        for r in job.ranks:
            if r.find("error"):
                problems.append(f"rank {r.rank} failed: {r.find('error')}")
        codes = job.release(10)
        if codes != [0] * NRANKS:
            problems.append(f"exit codes {codes}, expected all 0")
        problems += job.corrupt()
    finally:
        job.release(5)
    return verdict(name, problems, job)


if __name__ == "__main__":
    sys.exit(main())
