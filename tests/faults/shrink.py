#!/usr/bin/env python3
"""tutti_comm_shrink with real processes (4 ranks of shrink_rank; see its header for what each
line means). Scenarios:

  one-killed   a random rank but 0 (which hosts the rendezvous) is SIGKILLed at a random moment
               of a run of every collective; the 3 survivors shrink with TUTTI_SHRINK_DEAD
  two-killed   the same with two ranks killed at once; 2 survivors
  explicit     no death: rank 2 is excluded while alive, named by rank 0 only; the others name
               nobody and pass TUTTI_SHRINK_DEAD (they find nobody dead): all agree on rank 2
  killed-in-shrink  one rank but 0 is SIGKILLed during the run, another kills itself 0-40 ms
               after it starts its shrink (before the agreement, during it, while the new
               communicator is made, or after): the 2 survivors end with a communicator of 2,
               shrinking again where the new communicator's init or its first call failed
  regrow       one rank but 0 is SIGKILLed; the 3 survivors shrink, then grow back to 4 with a
               newcomer process that reads the grow token from a file: the survivors keep their
               shrunk ranks, the newcomer is rank 3, all finish their cases on the 4
  partial      only ranks 0 and 1 call shrink: it must fail on them with a timeout that names
               ranks 2 and 3, and ranks 2 and 3 (in a barrier instead) must fail too; no hang

The killed scenarios run over shm and over tcp. Each survivor must get its rank among the
survivors in order and the new size (after its last shrink), finish every collective on the new communicator with
correct data (checked against the independent reference), find the old communicator failing with
"was shrunk", and exit 0; /dev/shm must hold no segment of the job, neither while the survivors
still hold both communicators nor after they exit.

  shrink.py SHRINK_RANK SCENARIO [--seed S]   (FAULT_SEED overrides the seed)
"""

import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, leaked_segments, verdict  # noqa: E402

NRANKS, BOUND_S = 4, 60


def last(rank, prefix):
    """The last output line of rank starting with prefix, or None."""
    return next((text for _, text in reversed(rank.lines) if text.startswith(prefix)), None)


def survivors_went_on(job, survivors, excluded, or_excluded=None):
    """What must hold of every survivor once the scenario ran: its place among the survivors, the
    new size (of its last shrink), every case passed, the shrunk communicator retired (its first
    shrink excluding `excluded`, or `or_excluded` where given)."""
    problems = []
    retired = [f"was shrunk (tutti_comm_shrink excluded ranks {' '.join(map(str, ranks))})"
               for ranks in [excluded] + ([or_excluded] if or_excluded else [])]
    for position, r in enumerate(survivors):
        rank = job.ranks[r]
        for line in ("shrink-failed", "corrupt"):
            if rank.find(line):
                problems.append(f"rank {r}: {rank.find(line)}")
        if last(rank, f"shrunk rank {r} to") != f"shrunk rank {r} to {position}/{len(survivors)}":
            problems.append(f"rank {r} should be rank {position} of {len(survivors)}: "
                            f"{last(rank, 'shrunk')}")
        if not any(text in (rank.find("old") or "") for text in retired):
            problems.append(f"rank {r}'s old communicator does not say it {' or '.join(retired)}:"
                            f" {rank.find('old')}")
        if not rank.find("done"):
            problems.append(f"rank {r} did not finish its cases on the new communicator")
    return problems


def ended_clean(job, prefixes, ranks):
    """What must hold at the end: no segment of the job in /dev/shm while the ranks still hold
    their communicators, nor after they exit; each of ranks exits 0 when released."""
    problems = []
    leaked = leaked_segments(prefixes)
    if leaked:
        problems.append(f"/dev/shm holds {leaked} while the ranks run")
    codes = job.release(10)
    if [codes[r] for r in ranks] != [0] * len(ranks):
        problems.append(f"exit codes {codes}, expected 0 on ranks {ranks}")
    leaked = leaked_segments(prefixes)
    if leaked:
        problems.append(f"/dev/shm still holds {leaked}")
    return problems


def killed(shrink_rank, rng, victims, transport, dies_in_shrink=None):
    """victims are SIGKILLed during the run; dies_in_shrink, when given, kills itself 0-40 ms
    into its shrink."""
    name = f"ranks {victims} killed over {transport}"
    argv = [shrink_rank, "--seed", str(rng.randrange(1 << 32)), "--dead", "1"]
    if dies_in_shrink is not None:
        delay = rng.randrange(41)
        name += f", rank {dies_in_shrink} {delay} ms into its shrink"
        argv += ["--die-in-shrink", str(dies_in_shrink), "--die-after-ms", str(delay)]
    gone = victims + ([dies_in_shrink] if dies_in_shrink is not None else [])
    survivors = [r for r in range(NRANKS) if r not in gone]
    job = Job(argv, NRANKS, env={"TUTTI_TRANSPORT": transport, "TUTTI_TIMEOUT": "30"})
    problems = []
    try:
        if not job.wait_all("ready", 30):
            return name, ["the ranks never became ready"], job
        prefixes = job.shm_prefixes()
        if transport == "shm" and not prefixes:
            problems.append("no segment of the job found in the ranks' maps: cannot check leaks")
        time.sleep(rng.uniform(0.0, 0.3))
        for victim in victims:
            job.signal(victim, signal.SIGKILL)
        job.wait_until(lambda: all(job.ranks[r].find("done") or job.ranks[r].find("shrink-failed")
                                   or job.ranks[r].find("corrupt") for r in survivors), BOUND_S)
        # One that dies in its shrink is excluded by the first one or, once gone, by the next.
        problems += survivors_went_on(job, survivors, victims, sorted(gone))
        problems += ended_clean(job, prefixes, survivors)
    finally:
        job.release(5)
    return name, problems, job


def regrow(shrink_rank, rng, transport):
    """A random rank but 0 is SIGKILLed; the 3 survivors shrink, finish their cases, then grow
    back to 4 with a newcomer process (SHRINK_RANK_NEWCOMER) that got the grow token through a
    file; all 4 run the cases again."""
    victim = rng.randrange(1, NRANKS)
    survivors = [r for r in range(NRANKS) if r != victim]
    name = f"rank {victim} killed over {transport}, a newcomer grows the survivors back to 4"
    token = os.path.join(tempfile.mkdtemp(), "token")
    world = {r: {"TUTTI_WORLD_SIZE": str(NRANKS)} for r in range(NRANKS)}
    job = Job([shrink_rank, "--seed", str(rng.randrange(1 << 32)), "--dead", "1",
               "--token-file", token], NRANKS + 1,
              env={"TUTTI_TRANSPORT": transport, "TUTTI_TIMEOUT": "30"}, held=(NRANKS,),
              overrides={**world, NRANKS: {"SHRINK_RANK_NEWCOMER": str(NRANKS - 1)}})
    problems = []
    try:
        if not job.wait_all("ready", 30):
            return name, ["the ranks never became ready"], job
        prefixes = job.shm_prefixes()
        time.sleep(rng.uniform(0.0, 0.3))
        job.signal(victim, signal.SIGKILL)
        job.start_held()
        everyone = survivors + [NRANKS]
        job.wait_until(lambda: all(job.ranks[r].find("done-grown") or job.ranks[r].find("failed")
                                   or job.ranks[r].find("corrupt") for r in everyone), BOUND_S)
        problems += survivors_went_on(job, survivors, [victim])
        expected = {r: f"grown rank {r} to {position}/{NRANKS}"
                    for position, r in enumerate(survivors)}
        expected[NRANKS] = f"grown newcomer {NRANKS - 1} to {NRANKS - 1}/{NRANKS}"
        for r, line in expected.items():
            rank = job.ranks[r]
            if rank.find("grown") != line:
                problems.append(f"expected '{line}', got {rank.find('grown')} "
                                f"({rank.find('grow-failed')})")
            if not rank.find("done-grown"):
                problems.append(f"rank {r} did not finish its cases on the grown communicator")
        problems += job.corrupt()
        problems += ended_clean(job, prefixes | job.shm_prefixes(), everyone)
    finally:
        job.release(5)
        shutil.rmtree(os.path.dirname(token), ignore_errors=True)
    return name, problems, job


def explicit(shrink_rank, seed):
    job = Job([shrink_rank, "--seed", str(seed), "--ops", "7", "--exclude", "2", "--named-by",
               "0", "--dead", "1"], NRANKS, env={"TUTTI_TIMEOUT": "30"})
    problems = []
    try:
        job.wait_all("done", BOUND_S, ranks=[0, 1, 3])
        problems += survivors_went_on(job, [0, 1, 3], [2])
        if not job.ranks[2].find("excluded"):
            problems.append("rank 2 did not reach its exclusion")
        codes = job.release(10)
        if codes != [0] * NRANKS:
            problems.append(f"exit codes {codes}, expected all 0")
    finally:
        job.release(5)
    return "rank 2 excluded alive, named by rank 0 only", problems, job


def partial(shrink_rank, seed):
    job = Job([shrink_rank, "--seed", str(seed), "--ops", "7", "--callers", "0,1",
               "--timeout-ms", "2000"], NRANKS, env={"TUTTI_TIMEOUT": "30"})
    problems = []
    try:
        job.wait_until(lambda: all(r.find("shrink-failed") or r.find("error") for r in job.ranks),
                       BOUND_S)
        for r in (0, 1):
            failed = job.ranks[r].find("shrink-failed") or ""
            if "shrink timed out: ranks 2 3 neither called tutti_comm_shrink" not in failed:
                problems.append(f"rank {r}'s shrink did not time out naming ranks 2 and 3: "
                                f"{failed or job.ranks[r].find('shrunk')}")
        for r in (2, 3):
            if not job.ranks[r].find("error"):
                problems.append(f"rank {r}, which did not call shrink, did not fail")
        problems += job.corrupt()
        codes = job.release(10)
        if codes != [5, 5, 3, 3]:
            problems.append(f"exit codes {codes}, expected [5, 5, 3, 3]")
    finally:
        job.release(5)
    return "a shrink only ranks 0 and 1 call", problems, job


def main():
    args, seed, rng = driver_args(["shrink_rank", "scenario"])
    print(f"seed {seed} (FAULT_SEED={seed} replays this run)", flush=True)
    runs = []
    if args.scenario in ("one-killed", "two-killed"):
        count = 1 if args.scenario == "one-killed" else 2
        for transport in ("shm", "tcp"):
            runs.append(killed(args.shrink_rank, rng, sorted(rng.sample(range(1, NRANKS), count)),
                               transport))
    elif args.scenario == "killed-in-shrink":
        for transport in ("shm", "tcp"):
            victim, dies = rng.sample(range(1, NRANKS), 2)
            runs.append(killed(args.shrink_rank, rng, [victim], transport, dies))
    elif args.scenario == "regrow":
        for transport in ("shm", "tcp"):
            runs.append(regrow(args.shrink_rank, rng, transport))
    elif args.scenario == "explicit":
        runs.append(explicit(args.shrink_rank, seed))
    elif args.scenario == "partial":
        runs.append(partial(args.shrink_rank, seed))
    else:
        print(f"unknown scenario {args.scenario}")
        return 2
    return max(verdict(name, problems, job) for name, problems, job in runs)


if __name__ == "__main__":
    sys.exit(main())
