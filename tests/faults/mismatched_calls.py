#!/usr/bin/env python3
"""Ranks that disagree about a call (4 ranks; the last rank misbehaves at case --at, where every
rank all-reduces 1024 float32 elements with sum):
  count       it all-reduces 2048 elements;
  collective  it calls allgather;
  broadcast   it broadcasts as many bytes;
  dtype       it all-reduces int32 (as many bytes);
  op          it all-reduces with max;
  skip-one    it skips the call alone and goes on: its next call (another count and type, from
              the seed) meets the others' call;
  skip        it does not call at all (and idles).
Every message carries its call's signature, so the ranks that receive one of another call (at
least one) fail at once naming both calls and tell the others, which fail naming the rank that gave
up: every rank fails well within TUTTI_TIMEOUT (60 s). With --check (TUTTI_CHECK_CALLS=1) every rank compares
every signature before data moves, and each names both calls. With skip nothing arrives: every
other rank times out (TUTTI_TIMEOUT=3), at least one naming the idle rank. No call returns wrong
data; every failed communicator stays failed.

  mismatched_calls.py FAULT_RANK count|collective|broadcast|dtype|op|skip-one|skip TRANSPORT
                      [--check] [--algo ring|tree|oneshot]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, names_rank, verdict  # noqa: E402

NRANKS, AT, BOUND_S = 4, 3, 15
ODD = NRANKS - 1

# "rank 0 called allreduce(count=1024, float32, sum) as call #4 (collective #4)", or, from a
# message's tag, "... as collective #4".
CALL = re.compile(r"rank (\d+) called (\w+\([^)]*\)) as (?:call #(\d+)(?: \(collective #(\d+)\))?"
                  r"|collective #(\d+))")

# What must differ between the two calls a failing rank names, on the odd rank's side and on the
# others'.
DIFFERENCE = {
    "count": ("count=2048", "count=1024"),
    "collective": ("allgather(", "allreduce("),
    "broadcast": ("broadcast(", "allreduce("),
    "dtype": ("int32", "float32"),
    "op": ("max)", "sum)"),
}


def named_calls(error):
    """The (rank, call, collective number) of each call an error names."""
    calls = []
    for m in CALL.finditer(error or ""):
        number = m.group(5) or m.group(4) or m.group(3)
        calls.append((int(m.group(1)), m.group(2), int(number)))
    return calls


def shows_mismatch(error, how):
    """True when the error names the odd rank's call and another rank's, differing as `how`
    makes them differ."""
    calls = named_calls(error)
    odd = [c for c in calls if c[0] == ODD]
    others = [c for c in calls if c[0] != ODD]
    if not odd or not others:
        return False
    if how == "skip-one":
        return odd[0][1] != others[0][1] and odd[0][2] == others[0][2]
    theirs, ours = DIFFERENCE[how]
    return theirs in odd[0][1] and ours in others[0][1]


def main():
    args, _, _ = driver_args(["fault_rank", "how", "transport"],
                             [("--check", {"action": "store_true"}), ("--algo", {})])
    how = args.how
    skipping = how == "skip"
    env = {"TUTTI_TRANSPORT": args.transport, "TUTTI_TIMEOUT": "3" if skipping else "60"}
    if args.check:
        env["TUTTI_CHECK_CALLS"] = "1"
    if args.algo:
        env["TUTTI_ALGO"] = args.algo
    job = Job([args.fault_rank, "--kind", "allreduce", "--seed", "17", "--misbehave", how,
               "--misbehave-rank", str(ODD), "--at", str(AT)], NRANKS, env=env)
    problems = []
    try:
        failing = range(ODD) if skipping else range(NRANKS)
        errors = job.errors(failing, BOUND_S)
        for r, error in errors.items():
            if not error:
                problems.append(f"rank {r} did not fail within {BOUND_S} s")
            elif skipping and "timed out" not in error:
                problems.append(f"rank {r} failed but not with a timeout")
            elif not skipping and not shows_mismatch(error, how):
                problems.append(f"rank {r}'s error does not show both calls (its own or, through "
                                "a departure note, the rank's that found them)")
            elif not skipping and shows_mismatch(error, how) and "invalid usage" not in error:
                problems.append(f"rank {r}'s mismatch is not an invalid usage")
            elif not job.ranks[r].find("comm-failed"):
                problems.append(f"rank {r}'s communicator is not failed")
        if skipping:
            if not any(names_rank(e, ODD) for e in errors.values()):
                problems.append(f"no rank named the rank that skipped the call ({ODD})")
        elif not any(shows_mismatch(e, how) for e in errors.values()):
            problems.append("no rank's error shows both calls")
        problems += job.closing_problems()
    finally:
        job.release(5)
    name = f"{how} mismatch over {args.transport}" + (" checked" if args.check else "") + (
        f" ({args.algo})" if args.algo else "")
    return verdict(name, problems, job)


if __name__ == "__main__":
    sys.exit(main())
