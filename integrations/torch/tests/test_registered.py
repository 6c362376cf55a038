"""tutti_torch.registered_zeros: tensors in tutti's registered memory, 2 and 3 processes.

They come zero-filled with the asked shape and dtype; all-reduced through torch.distributed they
give the reference sums (each process regenerates every rank's seeded input), and each rank's
trace (TUTTI_TRACE_FILE, written when the group is destroyed) shows that those all-reduces ran
tutti's direct algorithm, reading the peers' tensors in place, while the same all-reduce on
ordinary tensors did not.
"""
import gc
import json
import os
import sys
import tempfile
from typing import List

import torch
import torch.distributed as dist

import world

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.int32)
SHAPE = (300, 1000)  # 600 KB and up: above the direct algorithm's 512 KiB threshold


def seeded(rank: int, dtype: torch.dtype) -> torch.Tensor:
    generator = torch.Generator().manual_seed(7 + rank)
    return torch.randint(-50, 50, SHAPE, generator=generator).to(dtype)  # exact in every dtype


def worker(args: List[str]) -> None:
    import tutti_torch

    dist.init_process_group("tutti")
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
    dist.all_reduce(plain)
    assert torch.equal(plain, sum(seeded(r, torch.float32) for r in range(size)))
    assert tutti_torch.registered_zeros((0, 3)).shape == (0, 3)
    dist.barrier()
    dist.destroy_process_group()
    gc.collect()  # the last reference to the group goes: its communicator writes the trace

    trace = os.environ["TUTTI_TRACE_FILE"].replace("%r", str(rank))
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    algorithms = [e["args"]["algorithm"] for e in events
                  if e["ph"] == "X" and e["name"] == "allreduce"]
    print(f"rank {rank}: all-reduce algorithms {algorithms}")
    assert algorithms[:len(DTYPES)] == ["direct"] * len(DTYPES), algorithms
    assert algorithms[len(DTYPES)] != "direct", algorithms


if __name__ == "__main__":
    if world.is_worker():
        world.worker_main(worker, final_barrier=False)
    ok = True
    for size in (2, 3):
        with tempfile.TemporaryDirectory() as traces:
            env = {"TUTTI_TRACE_FILE": os.path.join(traces, "trace-%r.json")}
            ok = world.check_world(__file__, size, ["registered"], env) and ok
    sys.exit(0 if ok else 1)
