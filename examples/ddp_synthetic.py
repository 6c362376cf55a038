"""PyTorch's DDP tutorial end to end, on synthetic data, with tutti as the backend.

    tuttirun -n 2 /usr/bin/python3 examples/ddp_synthetic.py
    RANK=.. WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 /usr/bin/python3 examples/ddp_synthetic.py

(with PYTHONPATH=<build>/integrations/torch). env:// initialisation, a DistributedSampler with
set_epoch, DDP, the epoch loss averaged with all_reduce for logging on rank 0, a checkpoint saved
by rank 0 only and loaded into a plain model.
"""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import tutti_torch  # noqa: F401  registers the "tutti" backend


class ToyModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net1 = nn.Linear(32, 64)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net2(self.relu(self.net1(x)))


def synthetic_dataset(samples: int = 2048) -> TensorDataset:
    # The same data on every rank; the sampler gives each rank its own share.
    generator = torch.Generator().manual_seed(1234)
    inputs = torch.randn(samples, 32, generator=generator)
    truth = torch.randn(32, 8, generator=generator)
    targets = inputs @ truth + 0.1 * torch.randn(samples, 8, generator=generator)
    return TensorDataset(inputs, targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.gettempdir(),
                                                             "ddp_synthetic.pt"))
    args = parser.parse_args()

    dist.init_process_group("tutti", init_method="env://")
    rank = dist.get_rank()

    torch.manual_seed(0)
    model = ToyModel()
    ddp_model = DDP(model)
    dataset = synthetic_dataset()
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01, momentum=0.9)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a different shuffle every epoch, the same on every rank
        totals = torch.zeros(2, dtype=torch.float64)  # loss sum, batches
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(inputs), targets)
            loss.backward()
            optimizer.step()
            totals += torch.tensor([loss.item(), 1.0], dtype=torch.float64)
        dist.all_reduce(totals)  # every rank's batches, for the log
        if rank == 0:
            print(f"epoch {epoch}: mean loss {totals[0].item() / totals[1].item():.4f}", flush=True)

    if rank == 0:
        torch.save(ddp_model.module.state_dict(), args.checkpoint)
    dist.barrier()  # the file is complete before anyone reads it

    plain = ToyModel()
    plain.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
    for saved, trained in zip(plain.parameters(), ddp_model.module.parameters()):
        assert torch.equal(saved, trained), "the checkpoint differs from this rank's model"
    if rank == 0:
        print(f"checkpoint {args.checkpoint} loads into a plain model and matches every rank",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
