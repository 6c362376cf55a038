"""tutti's own Reducer from Python: its bucket assignment equals torch's
_compute_bucket_assignment_by_size on random parameter lists; after the rebuild, the wrapper's
buckets are the ones torch's DDP rebuilt (sizes and parameter order, from DDP's logging data);
and tutti_torch.ddp.DistributedDataParallel trains to the same parameters as torch's DDP over
gloo (2 and 3 processes, 20 steps, several buckets, with and without no_sync)."""
import random
import re
import sys
from typing import List

import torch
import torch.distributed as dist
import torch.nn as nn
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


def train(wrap, variant: str) -> nn.Module:
    torch.manual_seed(dist.get_rank())  # different per rank: the wrapper must broadcast rank 0's
    model = wrap(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                               nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    for step in range(STEPS):
        if variant == "no_sync":
            with model.no_sync():
                x, y = batch(rank, step, micro=1)
                nn.functional.mse_loss(model(x), y).backward()
        x, y = batch(rank, step)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.module


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


def worker(variants: List[str]) -> None:
    from tutti_torch.ddp import DistributedDataParallel as TuttiDDP

    dist.init_process_group("tutti")
    gloo = dist.new_group(backend="gloo")
    rebuilt_buckets_match(TuttiDDP, lambda m, **kw: TorchDDP(m, process_group=gloo, **kw))
    for variant in variants:
        mine = train(lambda m: TuttiDDP(m, bucket_cap_mb=BUCKET_CAP_MB,
                                        first_bucket_mb=FIRST_BUCKET_MB), variant)
        theirs = train(lambda m: TorchDDP(m, process_group=gloo, bucket_cap_mb=BUCKET_CAP_MB),
                       variant)
        for (name, a), (_, b) in zip(mine.named_parameters(), theirs.named_parameters()):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6, msg=f"{variant}: {name}")
        print(f"rank {dist.get_rank()}: {variant}: tutti's Reducer trains to torch DDP's "
              "parameters")


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        world.worker_main(worker)
    assignments_match()
    ok = all([world.check_world(__file__, size, ["plain", "no_sync"]) for size in (2, 3)])
    sys.exit(0 if ok else 1)
