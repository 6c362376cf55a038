#!/usr/bin/env python3
"""Strangers on the ranks' TCP data ports (the rendezvous port has its own tests in
tests/unit/bootstrap). 4 ranks over tcp; rank 3 is SIGSTOPped as soon as its data listener
opens, so the others wait in the connection set-up with theirs open. Strangers connect to every
listener then, again after SIGCONT while the ranks connect, and again while collectives run:
some send nothing and hold the socket, some send garbage, some a hello claiming a 64 KiB job tag
followed by a 4 GiB frame length, some a well-formed hello of another job. (A stranger with the
right job tag and a wrong secret is tests/unit/transport's: the tag is not visible from outside
a job.) The job must still complete every case correctly and no rank may crash; once the ranks
are ready no rank may still listen on a data port (nobody accepts there any more: strangers
would pile up unaccepted). The driver prints how many strangers the ranks logged as dropped.

  data_port_strangers.py FAULT_RANK
"""

import os
import re
import socket
import struct
import sys
import signal
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import Job, verdict  # noqa: E402

NRANKS, LIMIT_S = 4, 120
HELLO_MAGIC, HELLO_VERSION = 0x68747574, 1  # transport/tcp/hello.hpp


def hello(tag_length, tag, to_rank=0):
    return struct.pack("<IHHiiI", HELLO_MAGIC, HELLO_VERSION, tag_length, 3, to_rank, 0) + tag


# What each kind of stranger sends after connecting (then it holds the socket open).
STRANGERS = {
    "silent": b"",
    "garbage": os.urandom(4096),
    "oversized": hello(0xFFFF, b"") + struct.pack("<I", 0xFFFFFFFF) + b"\xff" * 65536,
    "other job": hello(13, b"wdeadbeefdead"),
}


def listening_ports(pid, rendezvous_port):
    """TCP ports pid listens on, except the rendezvous (rank 0 serves the store there). Read
    from /proc directly: the driver polls it every millisecond."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports - {rendezvous_port}


class Crowd:
    """Stranger connections, kept open until close()."""

    def __init__(self):
        self.sockets = []

    def visit(self, ports):
        for port in ports:
            for payload in STRANGERS.values():
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=2)
                    s.sendall(payload)
                    self.sockets.append(s)
                except OSError:
                    pass  # a rank that already dropped us: fine

    def close(self):
        for s in self.sockets:
            s.close()


def main():
    fault_rank = sys.argv[1]
    job = Job([fault_rank, "--kind", "allreduce", "--seed", "23", "--max-bytes", "262144",
               "--ops", "300"], NRANKS, env={"TUTTI_TRANSPORT": "tcp", "TUTTI_TIMEOUT": "60"})
    crowd = Crowd()
    problems, dropped = [], 0
    try:
        # Rank 3 is stopped as soon as it listens, so that the others sit in connect() (or in
        # the address exchange before it) with their listeners open while strangers arrive.
        last = job.ranks[-1].proc.pid
        if not job.wait_until(lambda: listening_ports(last, job.port), 30):
            return verdict("data-port strangers", ["rank 3 never listened"], job)
        job.signal(NRANKS - 1, signal.SIGSTOP)
        ports = set().union(*(listening_ports(r.proc.pid, job.port) for r in job.ranks))
        crowd.visit(ports)
        time.sleep(0.5)
        crowd.visit(ports)
        job.signal(NRANKS - 1, signal.SIGCONT)
        crowd.visit(ports)
        if job.wait_all("ready", 60):
            listening = [r for r, rank in enumerate(job.ranks)
                         if listening_ports(rank.proc.pid, job.port)]
            if listening:
                problems.append(f"ranks {listening} still listen on a data port after init")
            crowd.visit(ports)  # while collectives run: refused
        if not job.wait_all("done", LIMIT_S):
            problems.append("the job did not complete every case")
        problems += job.corrupt()
        errors = [r.find("error") for r in job.ranks if r.find("error")]
        problems += [f"a call failed: {e}" for e in errors]
        codes = job.release(15)
        if codes != [0] * NRANKS:
            problems.append(f"exit codes {codes}")
        dropped = job.output().count("dropped connection from") + sum(
            int(n) for n in re.findall(r"(\d+) more dropped connections", job.output()))
    finally:
        crowd.close()
        job.release(5)
    return verdict(f"strangers on the data ports ({len(crowd.sockets)} connections, "
                   f"{dropped} logged as dropped by an acceptor)", problems, job)


if __name__ == "__main__":
    sys.exit(main())
