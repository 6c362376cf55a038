"""A job of real rank processes for the fault-injection drivers.

Every rank is started with the TUTTI_* launch variables (as tuttirun sets them), its stdin a pipe
and its output read line by line into memory, so a driver can wait for events ("ready", "error")
with a limit, inject a fault (signals) and release the survivors by closing their stdin. Every
process is under a hard limit: release() SIGKILLs whatever has not exited by then, so a hanging
rank fails its test instead of hanging the suite.
"""

import argparse
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import threading
import time


def driver_args(positional, options=(), description=None):
    """The drivers' command line: the positional names, then --seed (FAULT_SEED overrides it, to
    replay a failing run) and any (flag, argparse keywords) options. Returns args, seed and a
    random.Random seeded with it."""
    parser = argparse.ArgumentParser(description=description)
    for name in positional:
        parser.add_argument(name)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    for flag, keywords in options:
        parser.add_argument(flag, **keywords)
    args = parser.parse_args()
    seed = int(os.environ.get("FAULT_SEED", args.seed))
    return args, seed, random.Random(seed)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rank:
    def __init__(self, rank, argv, env):
        self.rank = rank
        self.lines = []  # (wall clock ns when read, text)
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time_ns(), line.rstrip("\n")))

    def find(self, prefix):
        """The first output line starting with prefix, or None."""
        return next((text for _, text in self.lines if text.startswith(prefix)), None)


class Job:
    """nranks processes of argv. prefix(rank) may return a command to run each rank under
    (e.g. ip netns exec NS); addr is where rank 0 hosts the rendezvous."""

    def __init__(self, argv, nranks, env=None, prefix=None, addr="127.0.0.1", held=(),
                 overrides=None):
        """Ranks listed in held start only when start_held() is called. overrides maps a rank to
        variables that differ on it (None: unset), to misconfigure one rank."""
        self.port = free_port()
        secret = secrets.token_hex(16)
        self.ranks = []
        self.held = {}
        for rank in range(nranks):
            rank_env = dict(os.environ, TUTTI_RANK=str(rank), TUTTI_WORLD_SIZE=str(nranks),
                            TUTTI_LOCAL_RANK=str(rank), TUTTI_ADDR=addr, TUTTI_PORT=str(self.port),
                            TUTTI_SECRET=secret, **(env or {}))
            for name, value in (overrides or {}).get(rank, {}).items():
                if value is None:
                    rank_env.pop(name, None)
                else:
                    rank_env[name] = value
            command = (prefix(rank) if prefix else []) + list(argv)
            if rank in held:
                self.held[rank] = (command, rank_env)
            else:
                self.ranks.append(Rank(rank, command, rank_env))

    def start_held(self):
        for rank, (command, env) in sorted(self.held.items()):
            self.ranks.insert(rank, Rank(rank, command, env))
        self.held = {}

    def wait_until(self, predicate, limit_s):
        """Polls predicate() until true or limit_s passes; returns its last value."""
        deadline = time.monotonic() + limit_s
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.01)

    def wait_all(self, prefix, limit_s, ranks=None):
        """True when every rank in ranks (default: all) printed a line starting with prefix."""
        chosen = [self.ranks[r] for r in (range(len(self.ranks)) if ranks is None else ranks)]
        return self.wait_until(lambda: all(r.find(prefix) for r in chosen), limit_s)

    def errors(self, ranks, limit_s):
        """Waits up to limit_s for each of ranks to report an error and what became of its
        communicator (or wrong data); returns rank -> its "error" line, None where there is none
        (a hang)."""
        chosen = [self.ranks[r] for r in ranks]
        self.wait_until(lambda: all(r.find("comm-") or r.find("corrupt") for r in chosen), limit_s)
        return {r.rank: r.find("error") for r in chosen}

    def first_errors(self, ranks, limit_s):
        """Like errors(), for ranks that exit at their error: waits up to limit_s for each to
        report an error (or wrong data); returns rank -> its "error" line or None."""
        chosen = [self.ranks[r] for r in ranks]
        self.wait_until(lambda: all(r.find("error") or r.find("corrupt") for r in chosen), limit_s)
        return {r.rank: r.find("error") for r in chosen}

    def corrupt(self):
        """The "corrupt" lines of every rank: calls that returned success with wrong data."""
        return [f"[{r.rank}] {r.find('corrupt')}" for r in self.ranks if r.find("corrupt")]

    def closing_problems(self, limit_s=10):
        """What the end of every scenario must hold: no call returned wrong data, and every rank
        exits once released."""
        problems = self.corrupt()
        if None in self.release(limit_s):
            problems.append("ranks did not exit when released")
        return problems

    def shm_prefixes(self):
        """"tutti-<secret's fingerprint>-<job tag>-" of the /dev/shm segments the ranks have mapped (their names are
        unlinked once everybody mapped them, but the mappings keep them): every segment of the
        job, or of a communicator split from it, starts with one of these."""
        prefixes = set()
        for r in self.ranks:
            try:
                with open(f"/proc/{r.proc.pid}/maps") as maps:
                    prefixes.update(re.findall(r"/dev/shm/(tutti-[0-9a-f]{12}-w[0-9a-f]+)", maps.read()))
            except OSError:
                pass
        return {p + "-" for p in prefixes} | {p + "." for p in prefixes}

    def signal(self, rank, signum, reap=True):
        """Sends signum to a rank; returns the wall clock (ns) just before. A SIGKILLed rank is
        reaped at once, as a launcher would, unless reap is False: then it stays a zombie until
        release(), as under a launcher that is slow to notice."""
        proc = self.ranks[rank].proc
        sent = time.time_ns()
        os.kill(proc.pid, signum)
        if signum == signal.SIGKILL and reap:
            proc.wait()
        return sent

    def release(self, limit_s):
        """Closes every stdin, waits up to limit_s for all to exit, SIGKILLs the rest. Returns
        the exit codes (None: had to be killed)."""
        for r in self.ranks:
            try:
                r.proc.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + limit_s
        codes = []
        for r in self.ranks:
            try:
                codes.append(r.proc.wait(max(0.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                r.proc.kill()
                r.proc.wait()
                codes.append(None)
            r.reader.join(5)
        return codes

    def output(self):
        return "\n".join(f"[{r.rank}] {text}" for r in self.ranks for _, text in r.lines)


def leaked_segments(prefixes):
    """Entries of /dev/shm that belong to the job (see Job.shm_prefixes)."""
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(tuple(prefixes)))


def verdict(name, problems, job):
    """Prints the outcome of a scenario (with the job's output when it failed, or always under
    FAULT_VERBOSE=1); returns the exit code."""
    if not problems:
        print(f"ok: {name}")
        if os.environ.get("FAULT_VERBOSE"):
            print(job.output())
        return 0
    print(f"FAILED: {name}:\n  " + "\n  ".join(problems) + "\noutput:\n" + job.output())
    return 1


def names_rank(message, rank):
    """True when message names rank and where it runs: "rank K (host:pid" or "rank K (addr:port"."""
    return message is not None and re.search(rf"rank {rank} \(\S+:\d+", message) is not None


def error_time_ns(error_line):
    """The wall clock in "error rank R at NS: ..."."""
    return int(re.search(r" at (\d+):", error_line).group(1))
