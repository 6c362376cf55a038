"""Bad input through torch.distributed with backend tutti: a Python exception with a clear
message on the rank that made the mistake, no hang, and the group still usable afterwards. Last,
collectives that differ between ranks (sizes), caught on every rank by TUTTI_CHECK_CALLS=1."""
import sys
from typing import List

import torch
import torch.distributed as dist
import tutti_torch  # registers the backend

import world
from mistakes import expect_error, group_still_works


def local_mistakes(rank: int, size: int) -> None:
    expect_error("does not support dtype Bool",
                 lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)))
    expect_error("supports ReduceOp SUM, PRODUCT, MIN, MAX and AVG",
                 lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND))
    # CUDA tensors are taken (test_cuda.py); a device that is neither is refused.
    with torch.inference_mode():  # torch 1.13 has no autograd kernel for c10d ops on meta
        expect_error("supports CPU and CUDA tensors only; got a tensor on meta",
                     lambda: dist.all_reduce(torch.empty(3, device="meta")))
    expect_error("not the world size",
                 lambda: dist.all_gather([torch.empty(3)], torch.ones(3)))
    expect_error("output[1] has 4 elements but the input has 3",
                 lambda: dist.all_gather([torch.empty(3), torch.empty(4)] + [torch.empty(3)] *
                                         (size - 2), torch.ones(3)))
    expect_error("must have world size",
                 lambda: dist.reduce_scatter_tensor(torch.empty(3), torch.ones(3 * size + 1)))
    expect_error("split sizes add up to",
                 lambda: dist.all_to_all_single(torch.empty(size), torch.ones(size),
                                                [1] * size, [2] * size))
    expect_error("without split sizes the output and input must be of one size",
                 lambda: dist.all_to_all_single(torch.empty(2 * size), torch.ones(size)))
    expect_error("input split size 0 is -1, below 0",
                 lambda: dist.all_to_all_single(torch.empty(size), torch.ones(size), [1] * size,
                                                [-1, size + 1] + [0] * (size - 2)))
    for root in (-1, size + 3):
        expect_error(f"gather: root rank {root} is not a rank of this group of {size}",
                     lambda: dist.gather(torch.ones(3), dst=root))
        expect_error(f"scatter: root rank {root} is not a rank of this group of {size}",
                     lambda: dist.scatter(torch.empty(3), src=root))
    # Elements sharing memory: refused before anything moves, not when copying the result back.
    expect_error("an output tensor has elements that share memory",
                 lambda: dist.all_reduce(torch.ones(1).expand(4)))
    # A group made by hand for a rank it cannot have: said at once, not after the store's timeout.
    expect_error(f"rank {size + 1} is not a rank of a group of {size}",
                 lambda: tutti_torch.ProcessGroupTutti(dist.HashStore(), size + 1, size))
    # A receive from any source of nothing: an empty send sends no message to take.
    expect_error("count 0", lambda: dist.recv(torch.empty(0)))
    # None of that reached the peers: the group still works.
    group_still_works(rank, size)


def worker(args: List[str]) -> None:
    dist.init_process_group("tutti")
    rank, size = dist.get_rank(), dist.get_world_size()
    local_mistakes(rank, size)
    # Sizes that differ between ranks: with TUTTI_CHECK_CALLS=1 every rank fails, naming both.
    expect_error("allreduce", lambda: dist.all_reduce(torch.ones(10 + rank)))


if __name__ == "__main__":
    if world.is_worker():
        # No final barrier: the communicator has failed for good, on purpose. The failed call
        # itself met every rank, so no one still needs rank 0's store.
        world.worker_main(worker, final_barrier=False)
    sys.exit(0 if world.check_world(__file__, 2, ["bad-input"],
                                    extra_env={"TUTTI_CHECK_CALLS": "1"}) else 1)
