"""tutti's own Reducer from Python: its bucket assignment equals torch's
_compute_bucket_assignment_by_size on random parameter lists; after the rebuild, the wrapper's
buckets are the ones torch's DDP rebuilt (sizes and parameter order, from DDP's logging data);
tutti_torch.ddp.DistributedDataParallel trains to the same parameters as torch's DDP over gloo
with the same options (2 and 3 processes, 20 steps, several buckets): plain, no_sync,
find_unused_parameters (the same parameters' .grad None, a parameter never used keeping None),
gradient_as_bucket_view (the gradients lie in the buckets), the two together with
zero_grad(set_to_none=True), and torch's fp16 hook; torch's bf16 hook against torch's DDP over
tutti's backend (gloo has no bfloat16); and bad hooks and constructor arguments are refused with
clear errors."""
import random
import re
import sys
from collections import namedtuple
from typing import List

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as TorchDDP

import world

STEPS = 20
BUCKET_CAP_MB = 0.002  # a 7 KB model spans several buckets
FIRST_BUCKET_MB = 0.001


def assignments_match() -> None:
    from tutti_torch import _C

    for seed in range(8):
        rng = random.Random(seed)
        tensors = [torch.empty([rng.randint(1, 40) for _ in range(rng.randint(1, 3))],
                               dtype=rng.choice([torch.float32, torch.float64]))
                   for _ in range(rng.randint(1, 30))]
        limits = sorted(rng.randint(64, 20_000) for _ in range(rng.randint(1, 3)))
        theirs, _ = dist._compute_bucket_assignment_by_size(tensors, limits)
        mine = _C.compute_bucket_assignment_by_size(tensors, limits)
        assert mine == theirs, f"seed {seed}: tutti {mine} torch {theirs}"
    print("bucket assignments match torch's on 8 random parameter lists")


def batch(rank: int, step: int, micro: int = 0):
    generator = torch.Generator().manual_seed(10_000 * rank + 100 * step + micro)
    return torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator)


class Branchy(nn.Module):
    """trunk and head are used at every step; side on some ranks at some steps (unused on this
    rank, averaged from the others); rare on every rank at some steps and on none at the others
    (unused everywhere: its .grad left as it is); never at no step (its .grad stays None)."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk, self.side, self.rare = (nn.Linear(16, 32), nn.Linear(32, 32),
                                            nn.Linear(32, 32))
        self.never, self.head = nn.Linear(32, 4), nn.Linear(32, 4)

    def forward(self, x: torch.Tensor, step: int) -> torch.Tensor:
        h = torch.relu(self.trunk(x))
        if (step + dist.get_rank()) % 3 != 0:
            h = h + torch.relu(self.side(h))
        if step % 4 == 0:
            h = self.rare(h)
        return self.head(h)


class Sequential(nn.Sequential):
    def forward(self, x: torch.Tensor, step: int) -> torch.Tensor:  # Branchy's signature
        return super().forward(x)


class BatchNormed(Sequential):
    """A Sequential with a batch norm: its buffers differ between ranks unless broadcast."""


# Each variant: the options both DDPs get, the model, the communication hook, whether each step
# accumulates a no_sync micro-batch first, and zero_grad's set_to_none.
Variant = namedtuple("Variant", "options model hook no_sync set_to_none", defaults=(
    {}, Sequential, None, False, False))
VARIANTS = {
    "plain": Variant(),
    "no_sync": Variant(no_sync=True),
    "find_unused": Variant(dict(find_unused_parameters=True), model=Branchy),
    "bucket_view": Variant(dict(gradient_as_bucket_view=True), no_sync=True),
    # New gradients each step (set_to_none) are copied into their views, as torch does.
    "bucket_view+find_unused": Variant(
        dict(gradient_as_bucket_view=True, find_unused_parameters=True), model=Branchy,
        set_to_none=True),
    "fp16": Variant(hook=default_hooks.fp16_compress_hook),
    "bf16": Variant(hook=default_hooks.bf16_compress_hook),
    # Rank 0's running statistics reach every rank before each forward that follows a
    # synchronising one (here: before each no_sync forward, not before the synchronising one).
    "batch_norm": Variant(model=BatchNormed, no_sync=True),
}


def tolerance_of(name: str, size: int) -> float:
    """tutti's fp16/bf16 hooks round and divide as torch's do (round to 16 bits, divide there),
    so the parameters are bitwise torch's wherever the sums are the same: with 2 ranks (one
    addition, rounded once by gloo and tutti alike) and for bf16 (whose reference runs over
    tutti's backend). fp16 over 3 ranks against gloo, which adds in another order: a gradient
    element may differ in the last 16-bit place (2^-11 relative), which SGD with momentum carries
    into the parameters; seen 8.6e-5 at worst, bound about 5 times that. Float32 keeps 1e-6
    (gloo and tutti sum 3 ranks in different orders)."""
    if name == "fp16" and size > 2:
        return 4e-4
    return 0.0 if name in ("fp16", "bf16") else 1e-6


def model_of(variant: Variant) -> nn.Module:
    if variant.model is Branchy:
        return Branchy()
    if variant.model is BatchNormed:
        return BatchNormed(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    return Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                      nn.Linear(32, 4))


def bf16_hook_on_cpu(state, bucket):
    """torch's bf16_compress_hook under another name: torch 1.13 refuses that name unless CUDA 11
    and NCCL 2.10 are there, which a CPU process group does not need."""
    return default_hooks.bf16_compress_hook(state, bucket)


def train(wrap, variant: Variant, hook=None) -> nn.Module:
    """20 steps of SGD with momentum; returns the DDP module with the last step's gradients."""
    torch.manual_seed(dist.get_rank())  # different per rank: the wrapper must broadcast rank 0's
    model = wrap(model_of(variant), **variant.options)
    if hook is not None:
        model.register_comm_hook(model.process_group, hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=variant.set_to_none)
        if variant.no_sync:
            with model.no_sync():
                x, y = batch(rank, step, micro=1)
                nn.functional.mse_loss(model(x, step), y).backward()
        x, y = batch(rank, step)
        nn.functional.mse_loss(model(x, step), y).backward()
        optimizer.step()
    return model


def gradients_are_bucket_views(ddp) -> None:
    """Each bucket's gradients (those not None) lie in one buffer, back to back in bucket order."""
    parameters = list(ddp.module.parameters())
    for bucket in ddp.bucket_assignment():
        start, offset = None, 0
        for index in bucket:
            grad = parameters[index].grad
            if grad is not None:
                start = grad.data_ptr() - offset if start is None else start
                assert grad.data_ptr() == start + offset, (bucket, index)
            offset += parameters[index].numel() * parameters[index].element_size()


def integers(text: str) -> List[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def rebuilt_buckets_match(tutti_ddp, torch_ddp) -> None:
    """Both at their defaults (first bucket 1 MiB) and a 0.5 MiB cap, on a 2.6 MB model."""
    def model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(),
                             nn.Linear(256, 512), nn.Linear(512, 4))
    mine = tutti_ddp(model(), bucket_cap_mb=0.5)
    theirs = torch_ddp(model(), bucket_cap_mb=0.5)
    for wrapped in (mine, theirs):
        for step in range(3):  # the first iteration records the ready order, the next rebuilds
            wrapped(batch(dist.get_rank(), step)[0].repeat(1, 16)).sum().backward()
    logged = theirs._get_ddp_logging_data()
    assert mine.stats()["bucket_bytes"] == integers(logged["rebuilt_bucket_sizes"]), \
        (mine.stats()["bucket_bytes"], logged["rebuilt_bucket_sizes"])
    order = [i for bucket in mine.bucket_assignment() for i in bucket]
    assert order == integers(logged["rebuilt_per_bucket_param_indices"]), \
        (mine.bucket_assignment(), logged["rebuilt_per_bucket_param_indices"])
    print(f"rank {dist.get_rank()}: rebuilt buckets match torch DDP's: "
          f"{mine.bucket_assignment()}, {mine.stats()['bucket_bytes']} bytes")


def bad_hooks(tutti_ddp, gloo) -> None:
    def wrapped():
        return tutti_ddp(nn.Linear(4, 4))

    def refused(call, error, text) -> None:
        try:
            call()
        except error as caught:
            assert text in str(caught), caught
        else:
            raise AssertionError(f"no {error.__name__} ({text})")

    refused(lambda: wrapped().register_comm_hook(None, "fp8"), ValueError,
            "unknown communication hook 'fp8'; the built-in hooks are 'allreduce', 'fp16' and "
            "'bf16'")
    refused(lambda: wrapped().register_comm_hook(None, lambda state, bucket: None), TypeError,
            "runs its hooks in C++")
    refused(lambda: wrapped().register_comm_hook(gloo, "fp16"), ValueError, "state must be None")
    twice = wrapped()
    twice.register_comm_hook(None, "fp16")
    refused(lambda: twice.register_comm_hook(None, "bf16"), RuntimeError, "only be called once")
    # Refused at construction, naming what was wrong, before any collective.
    refused(lambda: tutti_ddp(nn.Linear(4, 4), bucket_cap_mb=-1), ValueError,
            "bucket_cap_mb must be a finite number of MiB, 0 or more; got -1")
    refused(lambda: tutti_ddp(nn.Linear(4, 4), first_bucket_mb=float("nan")), ValueError,
            "first_bucket_mb must be a finite number of MiB, 0 or more; got nan")
    refused(lambda: tutti_ddp(nn.Sequential(nn.Embedding(10, 4, sparse=True))), ValueError,
            "does not support sparse gradients; 0 make them")
    print(f"rank {dist.get_rank()}: bad hooks and arguments are refused")


def worker(variants: List[str]) -> None:
    from tutti_torch.ddp import DistributedDataParallel as TuttiDDP

    dist.init_process_group("tutti")
    gloo = dist.new_group(backend="gloo")
    rebuilt_buckets_match(TuttiDDP, lambda m, **kw: TorchDDP(m, process_group=gloo, **kw))
    bad_hooks(TuttiDDP, gloo)
    for name in variants:
        variant = VARIANTS[name]
        # gloo has no bfloat16 all-reduce: torch's bf16 hook runs over tutti's backend.
        reference, their_hook = ((None, bf16_hook_on_cpu) if name == "bf16" else
                                 (gloo, variant.hook))
        mine = train(lambda m, **kw: TuttiDDP(m, bucket_cap_mb=BUCKET_CAP_MB,
                                              first_bucket_mb=FIRST_BUCKET_MB, **kw),
                     variant, variant.hook)
        theirs = train(lambda m, **kw: TorchDDP(m, process_group=reference,
                                                bucket_cap_mb=BUCKET_CAP_MB, **kw),
                       variant, their_hook)
        tolerance = tolerance_of(name, dist.get_world_size())
        worst = 0.0
        for (key, a), (_, b) in zip(mine.module.named_parameters(),
                                    theirs.module.named_parameters()):
            torch.testing.assert_close(a, b, rtol=tolerance, atol=tolerance,
                                       msg=f"{name}: {key}")
            worst = max(worst, (a - b).abs().max().item())
            assert (a.grad is None) == (b.grad is None), f"{name}: {key}: .grad {a.grad} {b.grad}"
        for (key, a), (_, b) in zip(mine.module.named_buffers(), theirs.module.named_buffers()):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6, msg=f"{name}: buffer {key}")
        if variant.model is Branchy:
            assert mine.module.never.weight.grad is None, "a parameter never used got a gradient"
        if variant.options.get("gradient_as_bucket_view"):
            gradients_are_bucket_views(mine)
        print(f"rank {dist.get_rank()}: {name}: tutti's Reducer trains to torch DDP's "
              f"parameters (largest absolute difference {worst:.2e})")


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        world.worker_main(worker)
    assignments_match()
    ok = all([world.check_world(__file__, size, list(VARIANTS)) for size in (2, 3)])
    sys.exit(0 if ok else 1)
