#!/usr/bin/env python3
"""SIGSTOP of one rank in the middle of all-reduces (4 ranks, TUTTI_TIMEOUT=3): every other rank
fails with a timeout within the bound, and says that the stopped rank is stopped (also the ranks
that wait on a rank that waits on it: a timeout looks at the state of the ranks on its host).
Then SIGCONT: the stopped rank's
operation must fail too, or complete with correct data and fail at the next call, and at once
with its peers' reason ("gave up"), not after a timeout of its own that blames a healthy peer
(their departure notes, runtime/peer_watch.hpp). It must never
return wrong data (every result is checked against the reference), and its communicator ends
failed.

  stop_rank.py FAULT_RANK TRANSPORT [--seed S]   (FAULT_SEED overrides the seed)
"""

import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, verdict  # noqa: E402

NRANKS, TIMEOUT_S, BOUND_S = 4, 3, 15


def main():
    args, seed, rng = driver_args(["fault_rank", "transport"])
    stopped, delay = rng.randrange(NRANKS), rng.uniform(0.0, 0.3)
    print(f"seed {seed}: rank {stopped} stopped after {delay * 1000:.0f} ms, {args.transport}")
    job = Job([args.fault_rank, "--kind", "allreduce", "--seed", str(seed)], NRANKS,
              env={"TUTTI_TRANSPORT": args.transport, "TUTTI_TIMEOUT": str(TIMEOUT_S)})
    problems = []
    try:
        if not job.wait_all("ready", 30):
            return verdict("stop", ["the ranks never became ready"], job)
        time.sleep(delay)
        job.signal(stopped, signal.SIGSTOP)
        others = [r for r in range(NRANKS) if r != stopped]
        errors = job.errors(others, BOUND_S)
        for r, error in errors.items():
            if not error:
                problems.append(f"rank {r} did not fail within {BOUND_S} s of the stop")
            elif "timed out" not in error:
                problems.append(f"rank {r} failed but not with a timeout")
            elif not re.search(rf"rank {stopped} \(\S+:\d+\) is stopped", error):
                problems.append(f"rank {r}'s timeout does not say that rank {stopped} is stopped")
        job.signal(stopped, signal.SIGCONT)
        resumed = job.errors([stopped], BOUND_S)[stopped]
        if not resumed and not job.ranks[stopped].find("corrupt"):
            problems.append(f"rank {stopped} did not fail within {BOUND_S} s of SIGCONT")
        elif resumed and "gave up" not in resumed:
            problems.append(f"rank {stopped} did not learn that its peers gave up: {resumed}")
        if not job.ranks[stopped].find("comm-failed"):
            problems.append(f"rank {stopped}'s communicator is not failed after SIGCONT")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict(f"SIGSTOP of rank {stopped} over {args.transport}", problems, job)


if __name__ == "__main__":
    sys.exit(main())
