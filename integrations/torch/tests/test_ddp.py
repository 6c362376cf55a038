"""torch's DistributedDataParallel over tutti against DDP over gloo: same seeds, 20 steps of a
small model on synthetic data, 2 and 3 processes; the parameters must match (float32, 1e-6
relative). Variants: plain (several buckets), no_sync, find_unused_parameters,
gradient_as_bucket_view, and batch norm (SyncBatchNorm where this torch runs it on CPU)."""
import sys
from typing import List

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import world

VARIANTS = ["plain", "no_sync", "find_unused", "bucket_view", "batch_norm"]
STEPS = 20
# Small buckets (bytes: 2 KB) so that a 7 KB model spans several and they overlap backward.
BUCKET_CAP_MB = 0.002


class Net(nn.Module):
    def __init__(self, norm: nn.Module, with_extra: bool) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), norm, nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 4)
        # Used only on some steps and ranks (find_unused_parameters).
        self.extra = nn.Linear(32, 4) if with_extra else None

    def forward(self, x: torch.Tensor, use_extra: bool = False) -> torch.Tensor:
        hidden = self.body(x)
        out = self.head(hidden)
        return out + self.extra(hidden) if use_extra else out


def batch(rank: int, step: int, micro: int = 0):
    generator = torch.Generator().manual_seed(10_000 * rank + 100 * step + micro)
    x = torch.randn(8, 16, generator=generator)
    return x, torch.randn(8, 4, generator=generator)


def make_model(variant: str, group) -> nn.Module:
    # Different initial values per rank: DDP must broadcast rank 0's.
    torch.manual_seed(dist.get_rank())
    norm = nn.BatchNorm1d(32) if variant == "batch_norm" else nn.Identity()
    model = Net(norm, with_extra=variant == "find_unused")
    if variant == "batch_norm" and sync_batch_norm_runs_on_cpu():
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model, group)
    return DDP(model, process_group=group, bucket_cap_mb=BUCKET_CAP_MB,
               find_unused_parameters=variant == "find_unused",
               gradient_as_bucket_view=variant == "bucket_view")


def sync_batch_norm_runs_on_cpu() -> bool:
    # torch 1.13's SyncBatchNorm raises "expected input tensor to be on GPU" for CPU input;
    # there the variant checks DDP's per-step broadcast of batch-norm buffers instead.
    try:
        nn.SyncBatchNorm(2).train()(torch.zeros(2, 2))
    except ValueError:
        return False
    except Exception:  # without a process group, a torch that accepts CPU input fails later
        return True
    return True


def train(variant: str, group) -> nn.Module:
    model = make_model(variant, group)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    for step in range(STEPS):
        use_extra = variant == "find_unused" and (step + rank) % 3 == 0
        if variant == "no_sync":
            with model.no_sync():  # gradient accumulation: local only
                x, y = batch(rank, step, micro=1)
                nn.functional.mse_loss(model(x), y).backward()
        x, y = batch(rank, step)
        nn.functional.mse_loss(model(x, use_extra), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.module


def compare(variant: str, gloo) -> None:
    over_tutti = train(variant, None)
    over_gloo = train(variant, gloo)
    worst = 0.0
    for (name, mine), (_, theirs) in zip(over_tutti.state_dict().items(),
                                         over_gloo.state_dict().items()):
        if mine.dtype.is_floating_point:
            torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-6,
                                       msg=f"{variant}: {name}")
            worst = max(worst, ((mine - theirs).abs() / theirs.abs().clamp(min=1e-6)).max().item())
        else:
            assert torch.equal(mine, theirs), f"{variant}: {name}"
    note = ""
    if variant == "batch_norm":
        note = " with SyncBatchNorm" if sync_batch_norm_runs_on_cpu() else \
            " (BatchNorm1d + buffer broadcast: this torch's SyncBatchNorm needs GPU input)"
    print(f"rank {dist.get_rank()}: {variant}{note}: parameters match gloo's "
          f"(largest relative difference {worst:.2e})")


def worker(variants: List[str]) -> None:
    dist.init_process_group("tutti")
    gloo = dist.new_group(backend="gloo")
    for variant in variants:
        compare(variant, gloo)


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        world.worker_main(worker)
    variants = sys.argv[1:] or VARIANTS
    ok = all([world.check_world(__file__, size, variants) for size in (2, 3)])
    sys.exit(0 if ok else 1)
