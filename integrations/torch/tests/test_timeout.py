"""The group timeout of init_process_group and new_group reaches tutti: with one rank skipping an
all_reduce, the other's fails after that timeout with tutti's timeout message, long before
TUTTI_TIMEOUT (60 s here). A group given no timeout (torch passes its default, 30 min) keeps
TUTTI_TIMEOUT instead, and a bad timeout is an error naming the value."""
import os
import re
import sys
import time
from datetime import timedelta
from typing import List, Optional

import torch
import torch.distributed as dist

import world

DONE_KEY = "rank 0 timed out"
ACK_KEY = "rank 1 saw it"


def skipped_all_reduce(rank: int, group: Optional[dist.ProcessGroup], expected: str) -> None:
    """Rank 1 skips an all_reduce on group; rank 0's fails ("timed out after `expected`") within a
    few seconds. Rank 1 stays alive until then (a rank that has exited is detected as gone, which
    would end rank 0's wait before its timeout does), and rank 0, which serves the store, until
    rank 1 is done with it."""
    store = dist.distributed_c10d._get_default_store()
    if rank == 1:
        store.get(DONE_KEY + expected)
        store.set(ACK_KEY + expected, "1")
        return
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(8), group=group)
        raise AssertionError("the all_reduce completed without rank 1")
    except RuntimeError as error:
        took = time.monotonic() - start
        message = str(error)
        print(f"rank 0: after {took:.1f} s: {message.splitlines()[0]}")
        assert "timed out after " + expected in message, message
        # What torch's own tests (and gloo's users) match a timeout by.
        assert re.search(" (Timed out|closed|timeout) ", message), message
        assert took < 20, f"took {took:.1f} s"
    finally:
        store.set(DONE_KEY + expected, "1")
        store.get(ACK_KEY + expected)


def worker(args: List[str]) -> None:
    rank = int(os.environ["RANK"])
    if args[0] == "explicit":
        # env:// would give the job's store the group's 2 s too, and a rank that reaches init more
        # than 2 s before rank 0 (torch's import on a busy machine) would fail to connect to it.
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), 2,
                              rank == 0, timedelta(seconds=60))
        dist.init_process_group("tutti", store=store, rank=rank, world_size=2,
                                timeout=timedelta(seconds=2))
        tensor = torch.ones(4)
        dist.all_reduce(tensor)  # the group works as usual
        assert torch.equal(tensor, torch.full((4,), 2.0)), tensor
        subgroup = dist.new_group([0, 1], backend="tutti", timeout=timedelta(milliseconds=1500))
        skipped_all_reduce(rank, subgroup, "1500 ms")
        skipped_all_reduce(rank, None, "2 s")
        # A timeout out of tutti's range fails the group's creation, naming the value.
        try:
            dist.new_group([0, 1], backend="tutti", timeout=timedelta(days=8))
            raise AssertionError("an 8-day timeout was accepted")
        except RuntimeError as error:
            assert "timeout_ms 691200000 is out of range" in str(error), error
            print(f"rank {rank}: as expected: {str(error).splitlines()[0]}")
    else:
        # TUTTI_TIMEOUT=3 in the environment; torch passes its default timeout, which must not
        # replace it.
        dist.init_process_group("tutti")
        skipped_all_reduce(rank, None, "3 s")


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        # No final barrier: the world group has failed for good, on purpose.
        world.worker_main(worker, final_barrier=False)
    ok = True
    for case, extra_env in (("explicit", {}), ("default", {"TUTTI_TIMEOUT": "3"})):
        ok = world.check_world(__file__, 2, [case], extra_env=extra_env) and ok
    sys.exit(0 if ok else 1)
