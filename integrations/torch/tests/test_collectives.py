"""Every collective through torch.distributed with backend tutti against gloo, 2 and 3 processes.

Inputs are seeded per rank. Where gloo 1.13 implements the operation and dtype, the reference is
gloo's own result in a gloo group of the same processes; where it does not (bfloat16, AVG,
reduce_scatter, the _base forms, list all_to_all) the reference is computed locally from every
rank's seeded inputs, which each process can regenerate.
"""
import sys
import warnings
from typing import List

import torch
import torch.distributed as dist

import world

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int32, torch.int64, torch.int8, torch.uint8]
OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT,
       "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}
GLOO_DTYPES = [d for d in DTYPES if d != torch.bfloat16]


def seeded(rank: int, case: int, shape, dtype: torch.dtype) -> torch.Tensor:
    """Rank's input for a case; small integers for integer types so products do not overflow."""
    generator = torch.Generator().manual_seed(1000 * case + rank)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    low = 0 if dtype == torch.uint8 else -2
    return torch.randint(low, 3, shape, generator=generator, dtype=torch.int64).to(dtype)


def reduce_reference(inputs: List[torch.Tensor], op: str, dtype: torch.dtype) -> torch.Tensor:
    wide = torch.stack([x.to(torch.float64 if dtype.is_floating_point else torch.int64)
                        for x in inputs])
    result = {"sum": lambda: wide.sum(0), "product": lambda: wide.prod(0),
              "min": lambda: wide.min(0).values, "max": lambda: wide.max(0).values,
              "avg": lambda: wide.sum(0) / len(inputs) if dtype.is_floating_point
              else torch.div(wide.sum(0), len(inputs), rounding_mode="trunc")}[op]()
    return result.to(dtype)


# Floats may differ in the last bits: gloo, tutti and the reference add in different orders, and
# a half-precision sum of three values near cancellation keeps few significant bits.
HALF_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2}


def same(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    tolerance = HALF_TOLERANCE.get(actual.dtype)
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance,
                               msg=lambda m: f"{what}: {m}")


def wait(work, async_op: bool) -> None:
    """An async_op work: its future (what DDP waits on) and wait() both complete."""
    if async_op:
        work.get_future().wait()
        work.wait()
        assert work.is_completed()


class Checker:
    def __init__(self, gloo) -> None:
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.gloo = gloo
        self.case = 0

    def inputs(self, shape, dtype):
        """This case's inputs of every rank (each process can make all of them); shape may be
        a function of the rank."""
        self.case += 1
        return [seeded(rank, self.case, shape(rank) if callable(shape) else shape, dtype)
                for rank in range(self.size)]


def reductions(checker: Checker) -> None:
    rank, gloo = checker.rank, checker.gloo

    for dtype in DTYPES:
        for name, op in list(OPS.items()) + [("avg", dist.ReduceOp.AVG)]:
            inputs = checker.inputs((5, 7), dtype)
            for async_op in (False, True):
                tensor = inputs[rank].clone()
                wait(dist.all_reduce(tensor, op=op, async_op=async_op), async_op)
                if dtype in GLOO_DTYPES and name != "avg":
                    expected = inputs[rank].clone()
                    dist.all_reduce(expected, op=op, group=gloo)
                else:
                    expected = reduce_reference(inputs, name, dtype)
                same(tensor, expected, f"all_reduce {dtype} {name} async={async_op}")

    # A non-contiguous tensor is reduced in a copy and copied back.
    inputs = checker.inputs((6, 4), torch.float32)
    tensor = inputs[rank].clone().t()
    dist.all_reduce(tensor)
    same(tensor, reduce_reference(inputs, "sum", torch.float32).t(), "all_reduce transposed")

    inputs = checker.inputs((9,), torch.float32)
    parts = [inputs[rank][:4].clone(), inputs[rank][4:].clone()]
    dist.all_reduce_coalesced(parts)
    expected = [inputs[rank][:4].clone(), inputs[rank][4:].clone()]
    dist.all_reduce_coalesced(expected, group=gloo)
    same(torch.cat(parts), torch.cat(expected), "all_reduce_coalesced")

def rooted(checker: Checker) -> None:
    rank, size = checker.rank, checker.size
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        for root in range(size):
            for async_op in (False, True):
                inputs = checker.inputs((3, 5), dtype)
                tensor = inputs[rank].clone()
                wait(dist.broadcast(tensor, src=root, async_op=async_op), async_op)
                same(tensor, inputs[root], f"broadcast {dtype} root {root}")

                tensor = inputs[rank].clone()
                wait(dist.reduce(tensor, dst=root, op=dist.ReduceOp.MAX, async_op=async_op),
                     async_op)
                if rank == root:
                    same(tensor, reduce_reference(inputs, "max", dtype), f"reduce {dtype} {root}")
                else:
                    same(tensor, inputs[rank], f"reduce {dtype} leaves rank {rank} alone")

def gathers_and_scatters(checker: Checker) -> None:
    rank, size, gloo = checker.rank, checker.size, checker.gloo
    for dtype in (torch.float32, torch.int32, torch.float16):
        for async_op in (False, True):
            inputs = checker.inputs((2, 3), dtype)
            outputs = [torch.empty(2, 3, dtype=dtype) for _ in range(size)]
            wait(dist.all_gather(outputs, inputs[rank], async_op=async_op), async_op)
            expected = [torch.empty(2, 3, dtype=dtype) for _ in range(size)]
            dist.all_gather(expected, inputs[rank], group=gloo)
            same(torch.stack(outputs), torch.stack(expected), f"all_gather {dtype}")

            flat = torch.empty(size * 2, 3, dtype=dtype)
            wait(dist.all_gather_into_tensor(flat, inputs[rank], async_op=async_op), async_op)
            same(flat, torch.cat(inputs), f"all_gather_into_tensor {dtype}")

            lists = [checker.inputs((4,), dtype) for _ in range(size)]  # lists[src][dst]
            output = torch.empty(4, dtype=dtype)
            wait(dist.reduce_scatter(output, [lists[rank][dst] for dst in range(size)],
                                     async_op=async_op), async_op)
            same(output, reduce_reference([lists[src][rank] for src in range(size)], "sum",
                                          dtype), f"reduce_scatter {dtype}")

            whole = torch.cat([lists[rank][dst] for dst in range(size)])
            output = torch.empty(4, dtype=dtype)
            wait(dist.reduce_scatter_tensor(output, whole, op=dist.ReduceOp.MIN,
                                            async_op=async_op), async_op)
            same(output, reduce_reference([lists[src][rank] for src in range(size)], "min",
                                          dtype), f"reduce_scatter_tensor {dtype}")

            # The output inside the input: NCCL's in place (this rank's block), and the block of
            # rank 0 on every rank (an overlap that is no in-place form but on rank 0).
            expected = reduce_reference([lists[src][rank] for src in range(size)], "sum", dtype)
            for block in (rank, 0):
                inout = torch.cat([lists[rank][dst] for dst in range(size)])
                output = inout[block * 4:(block + 1) * 4]
                wait(dist.reduce_scatter_tensor(output, inout, async_op=async_op), async_op)
                same(output, expected, f"reduce_scatter_tensor {dtype}, output block {block}")

def all_to_all(checker: Checker) -> None:
    rank, size, gloo = checker.rank, checker.size, checker.gloo
    for async_op in (False, True):
        inputs = checker.inputs((size * 2, 3), torch.float64)
        output = torch.empty(size * 2, 3, dtype=torch.float64)
        wait(dist.all_to_all_single(output, inputs[rank], async_op=async_op), async_op)
        expected = torch.empty_like(output)
        dist.all_to_all_single(expected, inputs[rank], group=gloo)
        same(output, expected, "all_to_all_single equal")

        # Unequal: rank r sends (r + dst) % 3 rows to dst (zero-sized blocks included).
        sends = [(rank + dst) % 3 for dst in range(size)]
        recvs = [(src + rank) % 3 for src in range(size)]
        inputs = checker.inputs(lambda r: (sum((r + d) % 3 for d in range(size)), 2),
                                torch.int64)
        output = torch.empty(sum(recvs), 2, dtype=torch.int64)
        wait(dist.all_to_all_single(output, inputs[rank], recvs, sends, async_op=async_op),
             async_op)
        expected = torch.empty_like(output)
        dist.all_to_all_single(expected, inputs[rank], recvs, sends, group=gloo)
        same(output, expected, "all_to_all_single unequal")

        blocks = [[torch.full((src + 1 + dst,), 10 * src + dst, dtype=torch.float32)
                   for dst in range(size)] for src in range(size)]
        outputs = [torch.empty(src + 1 + rank, dtype=torch.float32) for src in range(size)]
        wait(dist.all_to_all(outputs, blocks[rank], async_op=async_op), async_op)
        for src in range(size):
            same(outputs[src], blocks[src][rank], f"all_to_all from {src}")

def point_to_point(checker: Checker) -> None:
    rank, size = checker.rank, checker.size
    # A ring of sends and receives: every rank sends first (small messages fit tutti's FIFOs).
    for async_op in (False, True):
        inputs = checker.inputs((16,), torch.float32)
        received = torch.empty(16)
        sending = dist.isend(inputs[rank], (rank + 1) % size)
        if async_op:
            dist.irecv(received, (rank - 1) % size).wait()
        else:
            dist.recv(received, (rank - 1) % size)
        sending.wait()
        same(received, inputs[(rank - 1) % size], "send/recv ring")

    dist.barrier()
    wait(dist.barrier(async_op=True), True)


def worker(args: List[str]) -> None:
    warnings.filterwarnings("ignore", message=".*all_reduce_coalesced will be deprecated")
    dist.init_process_group("tutti")
    assert dist.get_backend() == "tutti"
    gloo = dist.new_group(backend="gloo")
    checker = Checker(gloo)
    for check in (reductions, rooted, gathers_and_scatters, all_to_all, point_to_point):
        check(checker)
    # A subgroup of tutti: its own communicator, rendezvous through its own store prefix.
    if dist.get_world_size() > 2:
        pair = dist.new_group([0, 1], backend="tutti")
        if dist.get_rank() < 2:
            tensor = torch.full((3,), float(dist.get_rank() + 1))
            dist.all_reduce(tensor, group=pair)
            same(tensor, torch.full((3,), 3.0), "all_reduce in a subgroup")
    print(f"rank {dist.get_rank()}: all collectives match")


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        world.worker_main(worker)
    ok = all(world.check_world(__file__, size, ["collectives"]) for size in (2, 3))
    sys.exit(0 if ok else 1)
