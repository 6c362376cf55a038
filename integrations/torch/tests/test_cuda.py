"""CUDA tensors through torch.distributed with backend tutti, 2 processes on the first GPU (tutti
runs several ranks on one GPU; with more GPUs each rank takes its own).

Skipped, with the reason, where torch has no CUDA or sees no GPU (Debian's torch is built
without CUDA). Inputs are seeded per rank and each process regenerates every rank's to compute
the reference on the CPU; they are small integers, so float sums are exact whatever the order.
The results are read on a stream other than the one the operation was issued on, after wait(),
the future or a then() callback, as a training loop and DDP's hooks do. Then the mistakes: CPU and CUDA tensors in one call,
and (with two GPUs) a second device in the same group.
"""
import sys
from typing import List

import torch
import torch.distributed as dist

import world
from mistakes import expect_error, group_still_works

COUNT = 4099  # odd, so nothing divides evenly


def seeded(rank: int, case: int, shape, dtype: torch.dtype) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1000 * case + rank)
    return torch.randint(-8, 9, shape, generator=generator, dtype=torch.int64).to(dtype)


def everyone(size: int, case: int, shape, dtype: torch.dtype) -> List[torch.Tensor]:
    return [seeded(rank, case, shape, dtype) for rank in range(size)]


def read_elsewhere(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's value as a kernel on another stream of its device sees it."""
    other = torch.cuda.Stream(tensor.device)
    with torch.cuda.stream(other):
        seen = (tensor * 1).cpu()
    return seen


def equal(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    assert torch.equal(actual.cpu(), expected), f"{what}: got {actual} expected {expected}"


def collectives(rank: int, size: int, device: torch.device) -> None:
    # Tensors go to the device with copy=True: the inputs the references use are never the tensors
    # a collective writes, even where device is the CPU (a plain .to would return the input).
    stream = torch.cuda.Stream(device)  # not the default stream: tutti must wait for it
    for case, dtype in enumerate([torch.float32, torch.bfloat16, torch.int64, torch.float16]):
        inputs = everyone(size, case, (COUNT,), dtype)
        with torch.cuda.stream(stream):
            tensor = (inputs[rank] - 1).to(device, copy=True)
            # Kernels that tutti's read must follow: read early, the sum is off by the size.
            torch.cuda._sleep(50_000_000)
            tensor.add_(1)
            work = dist.all_reduce(tensor, async_op=True)
        work.wait()
        equal(read_elsewhere(tensor), torch.stack(inputs).sum(0), f"all_reduce {dtype}")

        with torch.cuda.stream(stream):
            tensor = inputs[rank].to(device, copy=True)
            future = dist.all_reduce(tensor, op=dist.ReduceOp.MAX, async_op=True).get_future()
        result = future.wait()[0]
        equal(read_elsewhere(result), torch.stack(inputs).max(0).values, f"future max {dtype}")

        # A callback chained on the future (as DDP's hooks are) sees the result.
        with torch.cuda.stream(stream):
            tensor = inputs[rank].to(device, copy=True)
            work = dist.all_reduce(tensor, async_op=True)
            doubled = work.get_future().then(lambda done: done.value()[0] * 2)
        equal(read_elsewhere(doubled.wait()), torch.stack(inputs).sum(0) * 2, f"then() {dtype}")

    case = 10
    inputs = everyone(size, case, (6, 2 * 17), torch.float32)
    # A non-contiguous output: reduced in a copy, copied back; the other columns untouched.
    base = inputs[rank].to(device, copy=True)
    dist.all_reduce(base[:, ::2])
    expected = inputs[rank].clone()
    expected[:, ::2] = torch.stack(inputs).sum(0)[:, ::2]
    equal(read_elsewhere(base), expected, "all_reduce non-contiguous")

    flat = everyone(size, case + 1, (COUNT,), torch.float32)
    gathered = torch.empty(size * COUNT, device=device)
    dist.all_gather_into_tensor(gathered, flat[rank].to(device, copy=True))
    equal(read_elsewhere(gathered), torch.cat(flat), "all_gather_into_tensor")
    pieces = [torch.empty(COUNT, device=device) for _ in range(size)]
    dist.all_gather(pieces, flat[rank].to(device, copy=True))
    equal(read_elsewhere(torch.cat(pieces)), torch.cat(flat), "all_gather")

    scattered = torch.empty(COUNT, device=device)
    whole = everyone(size, case + 2, (size * COUNT,), torch.float32)
    dist.reduce_scatter_tensor(scattered, whole[rank].to(device, copy=True))
    equal(read_elsewhere(scattered), torch.stack(whole).sum(0)[rank * COUNT:(rank + 1) * COUNT],
          "reduce_scatter_tensor")

    for root in range(size):
        tensor = flat[rank].to(device, copy=True)
        dist.broadcast(tensor, src=root)
        equal(read_elsewhere(tensor), flat[root], f"broadcast from {root}")

    swapped = torch.empty(size * COUNT, device=device)
    dist.all_to_all_single(swapped, whole[rank].to(device, copy=True))
    expected = torch.cat([whole[peer][rank * COUNT:(rank + 1) * COUNT] for peer in range(size)])
    equal(read_elsewhere(swapped), expected, "all_to_all_single")

    # A ring of send/recv: each rank receives its left neighbour's tensor.
    received = torch.empty(COUNT, device=device)
    left, right = (rank - 1) % size, (rank + 1) % size
    sending = dist.isend(flat[rank].to(device, copy=True), right)
    dist.recv(received, left)
    sending.wait()
    equal(read_elsewhere(received), flat[left], "send/recv")


def mistakes(rank: int, size: int, device: torch.device) -> None:
    expect_error(f"needs all its tensors on one device; got {device} and cpu",
                 lambda: dist.all_gather_into_tensor(torch.empty(2 * size),
                                                     torch.ones(2, device=device)))
    expect_error(f"needs all its tensors on one device; got cpu and {device}",
                 lambda: dist.all_gather([torch.empty(2, device=device)] * size, torch.ones(2)))
    if torch.cuda.device_count() > 1:
        other = torch.device("cuda", (device.index + 1) % torch.cuda.device_count())
        expect_error(f"this group's CUDA tensors are on {device}; got one on {other}",
                     lambda: dist.all_reduce(torch.ones(2, device=other)))
    else:
        print(f"rank {rank}: skipped the second-device case: one GPU here")
    # None of that reached the peers; CPU tensors still work in the same group.
    group_still_works(rank, size)


def worker(args: List[str]) -> None:
    dist.init_process_group("tutti")
    rank, size = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    collectives(rank, size, device)
    mistakes(rank, size, device)


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        world.worker_main(worker)
    if not torch.cuda.is_available():
        print(f"SKIP: torch {torch.__version__} has no usable CUDA here (built with CUDA: "
              f"{torch.version.cuda}; GPUs visible: {torch.cuda.device_count()})")
        sys.exit(77)
    sys.exit(0 if world.check_world(__file__, 2, ["cuda"]) else 1)
