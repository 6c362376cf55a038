"""Tensors in tutti's registered memory, 2 and 3 processes: tutti_torch.registered_zeros, and
torch's own tensors under tutti_torch.enable_registered_allocator().

registered_zeros' tensors come zero-filled with the asked shape and dtype; all-reduced through
torch.distributed they give the reference sums (each process regenerates every rank's seeded
input). Under the allocator, a large tensor torch creates is registered and a small one is not;
torch's DistributedDataParallel over tutti trains to the parameters DDP over gloo reaches with
ordinary memory; and when the process runs out of file descriptors the allocator serves ordinary
memory instead (counted, the tensors still right). Each rank's trace (TUTTI_TRACE_FILE, written
when the group is destroyed) shows that the planner (TUTTI_AUTOTUNE=off) ran the all-reduces of
registered memory, DDP's buckets included, with tutti's direct algorithm, reading the peers' tensors in place. Ordinary tensors
are copied through the kernel instead, where that pays: an all_gather_into_tensor of ordinary
tensors ran direct with 3 processes and did not with 2, which run with
TUTTI_DIRECT_BUFFERS=registered; the in-place all-reduce of an ordinary tensor did not in either.
"""
import gc
import json
import os
import resource
import sys
import tempfile
from typing import List

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import world

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.int32)
SHAPE = (300, 1000)  # 600 KB and up: above the direct algorithms' 256 KiB threshold


def seeded(rank: int, dtype: torch.dtype) -> torch.Tensor:
    generator = torch.Generator().manual_seed(7 + rank)
    return torch.randint(-50, 50, SHAPE, generator=generator).to(dtype)  # exact in every dtype


MIN_BYTES = 1 << 20
DDP_STEPS = 5


def train_ddp(group) -> nn.Module:
    """A few SGD steps of a model whose first layer (1 MiB of weights) puts DDP's buckets above the
    direct algorithm's threshold."""
    torch.manual_seed(3)
    model = DDP(nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 4)),
                process_group=group)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(11 + dist.get_rank())
    for _ in range(DDP_STEPS):
        x, y = torch.randn(16, 256, generator=generator), torch.randn(16, 4, generator=generator)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.module


def check_allocator(rank: int, size: int, gloo) -> None:
    import tutti_torch

    for bad, error in (((0,), ValueError), ((MIN_BYTES, -1), ValueError), (("1",), TypeError)):
        try:
            tutti_torch.enable_registered_allocator(*bad)
        except error as raised:
            print(f"rank {rank}: as expected: {raised}")
        else:
            raise AssertionError(f"enable_registered_allocator{bad} did not raise")
    assert not tutti_torch.registered_allocator_stats()["enabled"]

    tutti_torch.enable_registered_allocator(min_bytes=MIN_BYTES)
    large = seeded(rank, torch.float32).repeat(2, 1)  # 2.4 MB, allocated by torch
    assert tutti_torch.registered_allocator_stats()["live_bytes"] >= large.numel() * 4
    dist.all_reduce(large)
    expected = sum(seeded(r, torch.int64) for r in range(size)).to(torch.float32).repeat(2, 1)
    assert torch.equal(large, expected), "all_reduce of an allocator tensor differs"
    small = torch.full((1000,), float(rank + 1))
    dist.all_reduce(small)
    assert torch.equal(small, torch.full((1000,), float(size * (size + 1) // 2)))

    over_tutti = train_ddp(None)
    tutti_torch.disable_registered_allocator()
    over_gloo = train_ddp(gloo)
    for (name, mine), (_, theirs) in zip(over_tutti.state_dict().items(),
                                         over_gloo.state_dict().items()):
        torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-7, msg=name)
    stats = tutti_torch.registered_allocator_stats()
    assert not stats["enabled"] and stats["cached_bytes"] == 0, stats

    # More than the host has: torch's own error, as without the allocator.
    tutti_torch.enable_registered_allocator(min_bytes=MIN_BYTES)
    try:
        torch.empty(1 << 62, dtype=torch.uint8)
    except RuntimeError as raised:
        assert "can't allocate memory" in str(raised), raised
    else:
        raise AssertionError("a 4 EiB tensor was allocated")
    tutti_torch.disable_registered_allocator()

    # Out of file descriptors: each registered block needs one, so the allocator falls back.
    tutti_torch.enable_registered_allocator(min_bytes=MIN_BYTES, max_cached_bytes=0)
    before = tutti_torch.registered_allocator_stats()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = os.dup(0)
    os.close(lowest_free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))  # no new descriptor at all
    try:
        held = [torch.full((MIN_BYTES // 4,), float(i)) for i in range(6)]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    stats = tutti_torch.registered_allocator_stats()
    assert stats["fallbacks"] - before["fallbacks"] == len(held), (before, stats)
    assert stats["live_bytes"] == before["live_bytes"], (before, stats)
    for i, tensor in enumerate(held):
        assert torch.equal(tensor, torch.full((MIN_BYTES // 4,), float(i))), i
    tutti_torch.disable_registered_allocator()


def worker(args: List[str]) -> None:
    import tutti_torch

    dist.init_process_group("tutti")
    gloo = dist.new_group(backend="gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        tensor = tutti_torch.registered_zeros(*SHAPE, dtype=dtype)
        assert tensor.shape == SHAPE and tensor.dtype == dtype, (tensor.shape, tensor.dtype)
        assert not tensor.any(), "registered memory comes zero-filled"
        tensor.copy_(seeded(rank, dtype))
        dist.all_reduce(tensor)
        expected = sum(seeded(r, torch.int64) for r in range(size)).to(dtype)
        assert torch.equal(tensor, expected), f"{dtype}: registered all_reduce differs"
    plain = seeded(rank, torch.float32)
    gathered = torch.empty((size * SHAPE[0], SHAPE[1]))
    dist.all_gather_into_tensor(gathered, plain)
    assert torch.equal(gathered, torch.cat([seeded(r, torch.float32) for r in range(size)]))
    dist.all_reduce(plain)
    assert torch.equal(plain, sum(seeded(r, torch.float32) for r in range(size)))
    assert tutti_torch.registered_zeros((0, 3)).shape == (0, 3)
    check_allocator(rank, size, gloo)
    dist.barrier()
    dist.destroy_process_group()
    gc.collect()  # the last reference to the group goes: its communicator writes the trace

    trace = os.environ["TUTTI_TRACE_FILE"].replace("%r", str(rank))
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    reduces = [(e["args"]["algorithm"], e["args"]["bytes"]) for e in events
               if e["ph"] == "X" and e["name"] == "allreduce"]
    gathers = [e["args"]["algorithm"] for e in events if e["ph"] == "X" and e["name"] == "allgather"]
    print(f"rank {rank}: all-reduces (algorithm, bytes) {reduces}, allgathers {gathers}")
    ordinary_reached = os.environ["TUTTI_DIRECT_BUFFERS"] == "any"
    assert (gathers[0] == "direct") == ordinary_reached, gathers
    algorithms = [algorithm for algorithm, _ in reduces]
    assert algorithms[:len(DTYPES)] == ["direct"] * len(DTYPES), algorithms
    plain, large, small = algorithms[len(DTYPES):len(DTYPES) + 3]
    # plain: in place, which the pull through the kernel would slow down (allreduce_direct.cpp);
    # small: 4 KB, below the threshold.
    assert plain != "direct" and large == "direct" and small != "direct", algorithms
    buckets = [algorithm for algorithm, size in reduces[len(DTYPES) + 3:] if size >= MIN_BYTES]
    assert buckets == ["direct"] * DDP_STEPS, f"DDP's large buckets ran {buckets}"


if __name__ == "__main__":
    if world.is_worker():
        world.worker_main(worker, final_barrier=False)
    ok = True
    for size, direct_buffers in ((2, "registered"), (3, "any")):
        with tempfile.TemporaryDirectory() as traces:
            # The planner's picks: TUTTI_AUTOTUNE (2 ranks) would time the other algorithms too.
            env = {"TUTTI_TRACE_FILE": os.path.join(traces, "trace-%r.json"),
                   "TUTTI_DIRECT_BUFFERS": direct_buffers, "TUTTI_AUTOTUNE": "off"}
            ok = world.check_world(__file__, size, ["registered"], env) and ok
    sys.exit(0 if ok else 1)
