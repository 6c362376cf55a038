#!/usr/bin/env python3
"""tutti_comm_abort from a second thread while the rank's main thread is in the middle of
all-reduces (4 ranks, TUTTI_TIMEOUT=60): the aborting rank's operation fails promptly (within
--prompt seconds of the abort), and every other rank fails with a remote-abort error naming the
aborting rank long before the timeout. No call returns wrong data; every communicator ends
failed.

  abort_thread.py FAULT_RANK TRANSPORT [--seed S]   (FAULT_SEED overrides the seed)
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, error_time_ns, verdict  # noqa: E402

NRANKS, PROMPT_S, BOUND_S = 4, 2.0, 15


def main():
    args, seed, rng = driver_args(["fault_rank", "transport"])
    aborter, after_ms = rng.randrange(NRANKS), rng.randrange(0, 300)
    print(f"seed {seed}: rank {aborter} aborts {after_ms} ms after its first case, "
          f"{args.transport}")
    job = Job([args.fault_rank, "--kind", "allreduce", "--seed", str(seed), "--abort-rank",
               str(aborter), "--abort-after-ms", str(after_ms)], NRANKS,
              env={"TUTTI_TRANSPORT": args.transport, "TUTTI_TIMEOUT": "60"})
    problems = []
    try:
        errors = job.errors(range(NRANKS), BOUND_S)
        aborting = job.ranks[aborter].find("aborting")
        if not aborting:
            return verdict("abort", ["the abort thread never ran"], job)
        aborted_at = int(aborting.split(" at ")[1])
        for r, error in errors.items():
            if not error:
                problems.append(f"rank {r} did not fail within {BOUND_S} s")
                continue
            if not job.ranks[r].find("comm-failed"):
                problems.append(f"rank {r}'s communicator is not failed")
            if r == aborter:
                took = (error_time_ns(error) - aborted_at) / 1e9
                if took > PROMPT_S:
                    problems.append(f"rank {r}'s operation failed {took:.1f} s after its abort")
            elif not re.search(rf"rank {aborter} \(\S+:\d+\) aborted", error):
                problems.append(f"rank {r}'s error does not say that rank {aborter} aborted")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict(f"abort on rank {aborter} over {args.transport}", problems, job)


if __name__ == "__main__":
    sys.exit(main())
