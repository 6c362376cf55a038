#!/usr/bin/env python3
"""SIGKILL trials: 4 ranks run seeded random cases of allreduce, allgather or broadcast over shm
or tcp (or the --transports given); a random rank is SIGKILLed at a random moment, and half the time left unreaped (a
zombie, as under a launcher slow to notice). Each trial asserts that every survivor
fails within --bound seconds (TUTTI_TIMEOUT is 60 s, so detection must come from dead-peer
detection, not the timeout), that its message names the dead rank and its host ("rank K (host:pid"
or "rank K (addr:port"), that its communicator stays failed, that no call returned wrong data,
and that /dev/shm holds no segment of the job afterwards. A survivor with no error by then is a
hang. Prints one line per trial and the detection times (kill to the last survivor's error).
With --survivors-exit each survivor exits as soon as it has its error, as real programs do: the
others must still name the rank that was killed, not a survivor that left after failing.

  kill_random_rank.py FAULT_RANK [--trials N] [--seed S] [--bound SECONDS] [--survivors-exit]
                     [--transports shm,tcp,ucx]
The seed is printed; FAULT_SEED overrides it (to replay a failing run).
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, error_time_ns, leaked_segments, names_rank  # noqa: E402

NRANKS = 4
KINDS = ["allreduce", "allgather", "broadcast"]
MAX_BYTES = [4096, 65536, 1 << 20, 4 << 20]


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def trial(fault_rank, rng, bound, survivors_exit, transports):
    """Runs one trial; returns (description, problems, detection seconds or None, hung, the
    ranks' output)."""
    transport, kind = rng.choice(transports), rng.choice(KINDS)
    victim, delay = rng.randrange(NRANKS), rng.uniform(0.0, 0.5)
    max_bytes, case_seed = rng.choice(MAX_BYTES), rng.randrange(1 << 32)
    reap = rng.random() < 0.5
    what = (f"{kind} over {transport}, max {max_bytes} bytes, case seed {case_seed}, "
            f"rank {victim} killed after {delay * 1000:.0f} ms"
            f"{'' if reap else ' (left a zombie)'}")
    job = Job([fault_rank, "--kind", kind, "--seed", str(case_seed), "--max-bytes",
               str(max_bytes), "--exit-on-error", str(int(survivors_exit))], NRANKS,
              env={"TUTTI_TRANSPORT": transport, "TUTTI_TIMEOUT": "60"})
    problems = []
    detection, hung = None, False
    try:
        if not job.wait_all("ready", 30):
            return what, ["the ranks never became ready"], None, False, job.output()
        prefixes = job.shm_prefixes()
        if transport == "shm" and not prefixes:
            problems.append("no segment of the job found in the ranks' maps: cannot check leaks")
        time.sleep(delay)
        killed_at = job.signal(victim, signal.SIGKILL, reap)
        survivors = [r for r in range(NRANKS) if r != victim]
        errors = (job.first_errors(survivors, bound) if survivors_exit
                  else job.errors(survivors, bound))
        problems += job.corrupt()
        times = []
        for r, error in errors.items():
            if not error:
                hung = hung or not job.ranks[r].find("corrupt")
                problems.append(f"rank {r} has no error {bound} s after the kill")
                continue
            times.append((error_time_ns(error) - killed_at) / 1e9)
            if not names_rank(error, victim):
                problems.append(f"rank {r}'s error does not name rank {victim} and its host")
            if not survivors_exit and not job.ranks[r].find("comm-failed"):
                problems.append(f"rank {r}'s communicator did not stay failed")
        if times and not hung:
            detection = max(times)
        codes = job.release(10)
        if any(code is None for code in codes):
            problems.append(f"ranks did not exit when released: exit codes {codes}")
        leaked = leaked_segments(prefixes)
        if leaked:
            problems.append(f"/dev/shm still holds {leaked}")
    finally:
        job.release(5)
    return what, problems, detection, hung, job.output()


def main():
    args, seed, rng = driver_args(
        ["fault_rank"],
        [("--trials", {"type": int, "default": 10}),
         ("--bound", {"type": float, "default": 10.0,
                      "help": "seconds a survivor may take to fail (TUTTI_TIMEOUT is 60)"}),
         ("--survivors-exit", {"action": "store_true",
                               "help": "survivors exit at their error instead of idling"}),
         ("--transports", {"default": "shm,tcp",
                           "help": "TUTTI_TRANSPORT values to draw from, comma-separated"})],
        description=__doc__.splitlines()[0])
    print(f"seed {seed} (FAULT_SEED={seed} replays this run)", flush=True)
    detections, hangs, failed = [], 0, 0
    for number in range(1, args.trials + 1):
        what, problems, detection, hung, output = trial(args.fault_rank, rng, args.bound,
                                                        args.survivors_exit,
                                                        args.transports.split(","))
        hangs += hung
        if detection is not None:
            detections.append(detection)
        status = "ok" if not problems else "FAILED"
        timing = f"{detection * 1000:.0f} ms" if detection is not None else "-"
        print(f"trial {number}: {status}: {what}: detected in {timing}", flush=True)
        if problems:
            failed += 1
            print("  " + "\n  ".join(problems) + "\n  output:\n" + output, flush=True)
    summary = f"{args.trials} trials, {failed} failed, {hangs} hangs"
    if detections:
        summary += (f"; detection (kill to the last survivor's error) p50 "
                    f"{percentile(detections, 50) * 1000:.0f} ms, p99 "
                    f"{percentile(detections, 99) * 1000:.0f} ms, max "
                    f"{max(detections) * 1000:.0f} ms")
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
