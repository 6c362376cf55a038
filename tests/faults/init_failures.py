#!/usr/bin/env python3
"""One rank fails at init (3 ranks, TUTTI_TIMEOUT=120): the others must not sit out the timeout
saying only "missing: 2" (docs/bootstrap.md, "Who may fail a job"). The misconfigured rank 2 is
started once ranks 0 and 1 are connected to the store.
  second-rank-0   rank 2 is started as rank 0 too: the one that finds the port taken names the
                  process listening there and tells that store; every rank fails within BOUND_S
                  saying rank 0 was started twice, naming it.
  missing-rank-0  rank 0 never starts (TUTTI_RENDEZVOUS_WAIT=3): ranks 1 and 2 fail within BOUND_S
                  saying nobody is listening at the rendezvous.
  member-mismatch no secret, but the launcher's job id (PMIX_NAMESPACE) on every rank; rank 2 says
                  the world has 4 ranks: every rank fails within BOUND_S with the mismatch.
  wrong-secret    rank 2 has another TUTTI_SECRET (TUTTI_TIMEOUT=6): it fails at once; a
                  connection without the secret cannot fail a secured job, so the others fail
                  at their timeout, but their message names rank 2 and why it was refused.
  ucx-unusable    (with the argument ucx, in a build with UCX) TUTTI_TRANSPORT=ucx where UCX has
                  no transport to use (UCX_TLS=nosuch): every rank fails within BOUND_S saying
                  it cannot create a UCP context.
  tcp-dead-before-connect  TUTTI_TRANSPORT=tcp, rank 2 run under gdb, which kills it where its
                  tcp connect starts: it has published its address and never connects. Ranks 0
                  and 1 fail within BOUND_S saying rank 2 is gone (or the other survivor, once it
                  has exited), not at the timeout waiting on their data ports. Skipped without
                  gdb.
  ucx-dead-before-connect  (with ucx) the same over UCX's shared memory, which would notice only
                  at a keepalive round, about 20 s.

  init_failures.py FAULT_RANK [ucx]
"""

import os
import re
import secrets
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, names_rank, verdict  # noqa: E402

NRANKS, BOUND_S = 3, 20
INIT_ERROR = "fault_rank: init: "


def clients_of(port):
    """How many connections to the rendezvous port are established (one per rank that joined
    the store)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def start_culprit(job, problems):
    """Starts the held rank 2 once ranks 0 and 1 wait in the store: a rank that came after the
    job failed and rank 0 left would rightly find nobody listening, which is not what a scenario
    tests."""
    if not job.wait_until(lambda: clients_of(job.port) >= 2, BOUND_S):
        problems.append("ranks 0 and 1 did not connect to the store")
    job.start_held()


def init_errors(job, limit_s):
    """Waits up to limit_s for every started rank to print its init error; rank -> message or
    None."""
    job.wait_until(lambda: all(r.find(INIT_ERROR) for r in job.ranks), limit_s)
    return {r.rank: (r.find(INIT_ERROR) or "")[len(INIT_ERROR):] or None for r in job.ranks}


def expect(problems, errors, ranks, pattern, what):
    for rank in ranks:
        if errors.get(rank) is None:
            problems.append(f"rank {rank} did not fail at init in time")
        elif not re.search(pattern, errors[rank]):
            problems.append(f"rank {rank}'s error does not say {what}")


def second_rank_0(fault_rank):
    job = Job([fault_rank], NRANKS, env={"TUTTI_TIMEOUT": "120"},
              overrides={2: {"TUTTI_RANK": "0"}}, held=(2,))
    problems = []
    try:
        start_culprit(job, problems)
        errors = init_errors(job, BOUND_S)
        expect(problems, errors, range(NRANKS), r"rank 0 was started twice", "rank 0 started twice")
        if not all(names_rank(e, 0) for e in errors.values()):
            problems.append("not every error names rank 0 and where it runs")
        # The process found listening is rank 0, which came first, named by its pid.
        named = {int(p) for e in errors.values() if e for p in re.findall(r"pid (\d+) \(", e)}
        if named != {job.ranks[0].proc.pid}:
            problems.append(f"the errors name pids {named}, not rank 0's {job.ranks[0].proc.pid}")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict("second rank 0", problems, job)


def missing_rank_0(fault_rank):
    job = Job([fault_rank], NRANKS, env={"TUTTI_TIMEOUT": "120", "TUTTI_RENDEZVOUS_WAIT": "3"},
              held=(0,))
    problems = []
    try:
        errors = init_errors(job, BOUND_S)
        expect(problems, errors, (1, 2),
               rf"nobody is listening at 127\.0\.0\.1:{job.port} \(rank 0 not started or exited\)",
               "nobody listens at the rendezvous")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict("missing rank 0", problems, job)


def member_mismatch(fault_rank):
    env = {"TUTTI_TIMEOUT": "120", "PMIX_NAMESPACE": f"init-failures-{os.getpid()}"}
    job = Job([fault_rank], NRANKS, env=env,
              overrides={r: {"TUTTI_SECRET": None} for r in range(NRANKS)} |
              {2: {"TUTTI_SECRET": None, "TUTTI_WORLD_SIZE": "4"}}, held=(2,))
    problems = []
    try:
        start_culprit(job, problems)
        errors = init_errors(job, BOUND_S)
        expect(problems, errors, range(NRANKS), r"world size mismatch: .*rank 2 says 4",
               "rank 2's world size")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict("a member's world size mismatch without a secret", problems, job)


def wrong_secret(fault_rank):
    job = Job([fault_rank], NRANKS, env={"TUTTI_TIMEOUT": "6"},
              overrides={2: {"TUTTI_SECRET": secrets.token_hex(16)}}, held=(2,))
    problems = []
    try:
        start_culprit(job, problems)
        errors = init_errors(job, 6 + BOUND_S)
        expect(problems, errors, (2,), r"TUTTI_SECRET", "that the secrets differ")
        expect(problems, errors, (0, 1),
               r"missing: 2; meanwhile a connection from \S+ claiming rank 2 of 3 \(\S+:\d+\) was "
               r"refused: .*did not prove the job secret", "why rank 2 is missing")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict("wrong secret on rank 2", problems, job)


def ucx_unusable(fault_rank):
    job = Job([fault_rank], NRANKS, env={"TUTTI_TIMEOUT": "120", "TUTTI_TRANSPORT": "ucx",
                                         "UCX_TLS": "nosuch", "UCX_WARN_UNUSED_ENV_VARS": "n"})
    problems = []
    try:
        errors = init_errors(job, BOUND_S)
        expect(problems, errors, range(NRANKS), r"ucx: cannot create a UCP context .*UCX_TLS",
               "that UCX cannot create a context")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict("TUTTI_TRANSPORT=ucx where UCX has no usable transport", problems, job)


def dead_before_connect(fault_rank, transport, env):
    """Rank 2 killed by gdb where `transport`'s connect starts; the survivors must name it."""
    what = f"rank 2 dead before the {transport} connect"
    gdb = shutil.which("gdb")
    if not gdb:
        print(f"SKIPPED: {what} (no gdb to stop it there)")
        return 0
    stop_in_connect = [gdb, "-batch", "-nx", "-ex", "set breakpoint pending on",
                       "-ex", f"break {transport.capitalize()}Transport::connect", "-ex", "run",
                       "-ex", "kill", "--args"]
    job = Job([fault_rank], NRANKS,
              env={"TUTTI_TIMEOUT": "120", "TUTTI_TRANSPORT": transport, **env},
              prefix=lambda rank: stop_in_connect if rank == 2 else [])
    problems = []
    try:
        job.wait_until(lambda: all(job.ranks[r].find(INIT_ERROR) for r in (0, 1)), BOUND_S)
        errors = {r: (job.ranks[r].find(INIT_ERROR) or "")[len(INIT_ERROR):] or None
                  for r in (0, 1)}
        # "Breakpoint 1, ..." with one thread, "Thread N ... hit Breakpoint 1, ..." with several.
        if not any("Breakpoint 1, " in text for _, text in job.ranks[2].lines):
            problems.append(f"gdb did not stop rank 2 where its {transport} connect starts")
        # A survivor that failed first and exited is gone without a word too: the other may name it.
        expect(problems, errors, (0, 1),
               r"rank [0-2] \(\S+:\d+\) is gone: its process exited in init", "that a rank is gone")
        if not any(e and re.search(r"rank 2 \(\S+:\d+\) is gone", e) for e in errors.values()):
            problems.append("no survivor says that rank 2 is gone")
        problems += job.closing_problems()
    finally:
        job.release(5)
    return verdict(what, problems, job)


def tcp_dead_before_connect(fault_rank):
    return dead_before_connect(fault_rank, "tcp", {})


def ucx_dead_before_connect(fault_rank):
    return dead_before_connect(fault_rank, "ucx", {"UCX_TLS": "posix,sysv,cma,self",
                                                   "UCX_WARN_UNUSED_ENV_VARS": "n"})


def main():
    fault_rank = sys.argv[1]
    scenarios = [second_rank_0, missing_rank_0, member_mismatch, wrong_secret,
                 tcp_dead_before_connect]
    if sys.argv[2:] == ["ucx"]:
        scenarios += [ucx_unusable, ucx_dead_before_connect]
    start = time.monotonic()
    failed = sum(scenario(fault_rank) for scenario in scenarios)
    print(f"{time.monotonic() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
