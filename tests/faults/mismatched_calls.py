#!/usr/bin/env python3
"""Ranks that disagree about a call (4 ranks; the last rank misbehaves at case --at):
  count       with TUTTI_CHECK_CALLS=1 it all-reduces 2048 elements where the others do 1024:
              every rank fails, and its message shows both calls;
  collective  with TUTTI_CHECK_CALLS=1 it calls allgather where the others call allreduce:
              the same;
  skip        without checking, it does not call at all (and idles): every other rank times
              out (TUTTI_TIMEOUT=3), at least one naming it.
No call returns wrong data; every failed communicator stays failed.

  mismatched_calls.py FAULT_RANK count|collective|skip TRANSPORT
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, names_rank, verdict  # noqa: E402

NRANKS, AT, BOUND_S = 4, 3, 15
ODD = NRANKS - 1

# What the failing ranks must print: both calls, as "rank A called X; rank B called Y".
BOTH_CALLS = {
    "count": r"called allreduce\(count=(1024|2048).*called allreduce\(count=(1024|2048)",
    "collective": r"called (allreduce|allgather)\(count=1024.*called (allreduce|allgather)"
                  r"\(count=1024",
}


def main():
    fault_rank, how, transport = sys.argv[1:4]
    checking = how != "skip"
    env = {"TUTTI_TRANSPORT": transport, "TUTTI_TIMEOUT": "60" if checking else "3"}
    if checking:
        env["TUTTI_CHECK_CALLS"] = "1"
    job = Job([fault_rank, "--kind", "allreduce", "--seed", "17", "--misbehave", how,
               "--misbehave-rank", str(ODD), "--at", str(AT)], NRANKS, env=env)
    problems = []
    try:
        failing = range(NRANKS) if checking else range(ODD)
        errors = job.errors(failing, BOUND_S)
        for r, error in errors.items():
            if not error:
                problems.append(f"rank {r} did not fail within {BOUND_S} s")
            elif checking and not re.search(BOTH_CALLS[how], error):
                problems.append(f"rank {r}'s error does not show both calls")
            elif not checking and "timed out" not in error:
                problems.append(f"rank {r} failed but not with a timeout")
            elif not job.ranks[r].find("comm-failed"):
                problems.append(f"rank {r}'s communicator is not failed")
        if checking:
            mine = [e for e in errors.values() if e and f"rank {ODD} called" in e]
            if not mine:
                problems.append(f"rank {ODD}'s own error is missing or does not show its call")
        elif not any(names_rank(e, ODD) for e in errors.values()):
            problems.append(f"no rank named the rank that skipped the call ({ODD})")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict(f"{how} mismatch over {transport}", problems, job)


if __name__ == "__main__":
    sys.exit(main())
