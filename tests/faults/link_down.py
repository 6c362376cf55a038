#!/usr/bin/env python3
"""Two hosts as network namespaces joined by a veth pair (as tests/hosts/two_hosts.sh builds
them), ranks 0-1 in one and 2-3 in the other: shm within a host, TCP across. In the middle of
all-reduces the link goes down. Nothing resets the connections (packets are just lost), so only
the deadline can end the waits: every rank must fail within TUTTI_TIMEOUT (5 s) plus a margin,
not hang, and the ranks waiting across the link must name the peer on the other host. Skipped
(exit 77) where namespaces cannot be made.

  link_down.py FAULT_RANK [--seed S]   (FAULT_SEED overrides the seed)
"""

import contextlib
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, driver_args, verdict  # noqa: E402

NRANKS, TIMEOUT_S, BOUND_S = 4, 5, 20
ADDRESSES = ["192.0.2.1", "192.0.2.2"]  # a documentation range: never routed


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def two_hosts():
    """Yields (namespaces, the veth end in the first one); removes everything afterwards."""
    suffix = os.getpid()
    hosts = [f"tutti-f1-{suffix}", f"tutti-f2-{suffix}"]
    ends = [f"f1-{suffix}", f"f2-{suffix}"]
    try:
        ip("netns", "add", hosts[0])
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"SKIP: cannot create network namespaces here: {getattr(e, 'stderr', e)}")
        sys.exit(77)
    try:
        ip("netns", "add", hosts[1])
        ip("link", "add", ends[0], "type", "veth", "peer", "name", ends[1])
        for host, end, address in zip(hosts, ends, ADDRESSES):
            ip("link", "set", end, "netns", host)
            ip("-n", host, "addr", "add", f"{address}/24", "dev", end)
            ip("-n", host, "link", "set", "lo", "up")
            ip("-n", host, "link", "set", end, "up")
        yield hosts, ends[0]
    finally:
        for host in hosts:
            subprocess.run(["ip", "netns", "del", host], capture_output=True)


def main():
    args, seed, rng = driver_args(["fault_rank"])
    delay = rng.uniform(0.0, 0.5)
    print(f"seed {seed}: the link goes down {delay * 1000:.0f} ms after the first case")
    host_of = [0, 0, 1, 1]
    with two_hosts() as (hosts, first_end):
        job = Job([args.fault_rank, "--kind", "allreduce", "--seed", str(seed)], NRANKS,
                  env={"TUTTI_TIMEOUT": str(TIMEOUT_S)}, addr=ADDRESSES[0],
                  prefix=lambda rank: ["ip", "netns", "exec", hosts[host_of[rank]]])
        problems = []
        try:
            if not job.wait_all("ready", 60):
                return verdict("link down", ["the ranks never became ready"], job)
            time.sleep(delay)
            ip("-n", hosts[0], "link", "set", first_end, "down")
            errors = job.errors(range(NRANKS), BOUND_S)
            across = 0
            for r, error in errors.items():
                if not error:
                    problems.append(f"rank {r} did not fail within {BOUND_S} s of the link loss")
                    continue
                named = [int(p) for p in re.findall(r"rank (\d+) \(\S+:\d+", error)]
                if not named:
                    problems.append(f"rank {r}'s error names no peer")
                across += any(host_of[p] != host_of[r] for p in named)
            if not across:
                problems.append("no rank named a peer on the other host")
            problems += job.closing_problems()
        finally:
            job.release(5)
        return verdict("link down between two hosts", problems, job)


if __name__ == "__main__":
    sys.exit(main())
