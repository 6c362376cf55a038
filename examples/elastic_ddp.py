"""PyTorch DDP training that goes on when a rank dies, with tutti as the backend.

    tuttirun --elastic 1 -n 4 /usr/bin/python3 examples/elastic_ddp.py --checkpoint ckpt.pt
    # kill -9 any rank's pid but rank 0's: the survivors shrink, tuttirun starts a replacement,
    # it joins, gets the model and optimizer state, and the job ends as an uninterrupted one

(with PYTHONPATH=<build>/integrations/torch). A small regression network trained with SGD and
momentum on synthetic data; each step's global batch is the same samples at any world size: a
DistributedSampler re-sharded for the current world size (num_replicas, rank of the current
group), each rank taking its share of the step's batch. When a step fails, the survivors drop
their DDP module, recover (tutti_torch.elastic: shrink past the dead, grow back under
tuttirun --elastic), take rank 0's model, optimizer state and step by broadcast, wrap the model
in a new DDP over the new group and redo the step; without --elastic they go on with fewer. Rank 0
checkpoints every --checkpoint-every steps; a run that finds the checkpoint resumes from it
(restarting the whole job, torchelastic's way, also works).

--reference runs the same training in one process without distribution (the whole batch at
once): the numbers an uninterrupted job must reproduce up to rounding.

Output: rank 0 prints "loss step S <hex>" once per completed step; every rank "rank R pid P step
S" every 10 steps, a line per recovery, and "final rank R step S parameters <hex...>" at the end
(float.hex, exact).
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

import tutti_torch.elastic

SAMPLES, FEATURES, HIDDEN, OUTPUTS = 960, 8, 8, 4
RECOVERY_TRIES = 3


def synthetic_dataset() -> torch.utils.data.TensorDataset:
    generator = torch.Generator().manual_seed(1234)
    inputs = torch.randn(SAMPLES, FEATURES, generator=generator, dtype=torch.float64)
    truth = torch.randn(FEATURES, OUTPUTS, generator=generator, dtype=torch.float64)
    targets = torch.tanh(inputs @ truth) + 0.1 * torch.randn(SAMPLES, OUTPUTS, generator=generator,
                                                             dtype=torch.float64)
    return torch.utils.data.TensorDataset(inputs, targets)


def make_model() -> nn.Module:
    torch.manual_seed(0)
    layers = [nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUTPUTS)]
    return nn.Sequential(*layers).double()


def step_indices(dataset, args, step: int, replicas: int, rank: int):
    """This rank's samples of the step's global batch: with the epoch's shuffle (the same for
    any world size), rank r of W takes batch positions r, r+W, ... of the step's batch, so the
    union over ranks is the same batch whatever W is."""
    if args.batch % replicas:
        sys.exit(f"elastic_ddp: --batch {args.batch} is not a multiple of the world size "
                 f"{replicas}")
    steps_per_epoch = SAMPLES // args.batch
    sampler = DistributedSampler(dataset, num_replicas=replicas, rank=rank, shuffle=True,
                                 seed=args.seed)
    sampler.set_epoch(step // steps_per_epoch)
    share = args.batch // replicas
    start = (step % steps_per_epoch) * share
    return list(sampler)[start:start + share]


def say(line: str) -> None:
    """One write per line (under 4 KiB, so atomic on a pipe): the ranks share tuttirun's output,
    and print's separate write of the newline (unbuffered Python) lets another rank's line in."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def state_of(model, optimizer, step: int) -> dict:
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}


def restore(model, optimizer, state: dict) -> int:
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["step"]


def save_checkpoint(path: str, state: dict) -> None:
    partial = path + ".partial"
    tutti_torch.elastic.save_state(state, partial)
    os.replace(partial, path)  # a death while saving leaves the previous checkpoint whole


def print_final(rank: int, step: int, model) -> None:
    values = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    say(f"final rank {rank} step {step} parameters {' '.join(v.hex() for v in values)}")


def reference(args) -> None:
    dataset = synthetic_dataset()
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for step in range(args.steps):
        inputs, targets = dataset[step_indices(dataset, args, step, 1, 0)]
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        say(f"loss step {step} {loss.item().hex()}")
    print_final(0, args.steps, model)


def train_step(ddp, group, dataset, args, step: int) -> float:
    """Forward, backward (the gradients averaged over the group) and the batch's loss; changes
    no state, so a failure anywhere in it leaves the step to redo."""
    inputs, targets = dataset[step_indices(dataset, args, step, group.size, group.rank)]
    loss = nn.functional.mse_loss(ddp(inputs), targets)
    loss.backward()
    total = loss.detach() * len(inputs)
    torch.distributed.all_reduce(total, group=group.group)
    return total.item() / args.batch


def recover(group, model, optimizer, step: int) -> int:
    """The group past the dead (grown back under tuttirun --elastic) and rank 0's state: the step
    to redo. Tried again if it fails (another rank may die during the recovery itself), up to
    RECOVERY_TRIES times: a recovery that keeps failing (rank 0 gone, and the store with it) ends
    the process."""
    for attempt in range(1, RECOVERY_TRIES + 1):
        try:
            group.recover()
            return restore(model, optimizer, group.sync_state(state_of(model, optimizer, step)))
        except RuntimeError as error:
            say(f"rank {group.rank}: recovery {attempt} of {RECOVERY_TRIES} failed "
                f"({str(error).splitlines()[0]})")
            if attempt == RECOVERY_TRIES:
                raise


def train(args) -> None:
    group = tutti_torch.elastic.ElasticGroup()
    dataset = synthetic_dataset()
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = 0
    if group.joined:
        step = restore(model, optimizer, group.sync_state(None))
        say(f"rank {group.rank} pid {os.getpid()} joined at step {step}")
    elif args.checkpoint and os.path.exists(args.checkpoint):
        saved = tutti_torch.elastic.load_state(args.checkpoint) if group.rank == 0 else None
        step = restore(model, optimizer, group.sync_state(saved))
        say(f"rank {group.rank} resumes from {args.checkpoint} at step {step}")
    ddp = None
    while step < args.steps:
        try:
            if ddp is None:  # DDP's construction broadcasts rank 0's parameters: it can fail too
                ddp = DDP(model, process_group=group.group)
            optimizer.zero_grad()
            loss = train_step(ddp, group, dataset, args, step)
        except RuntimeError as error:
            failure = str(error).splitlines()[0]
        else:
            optimizer.step()
            step += 1
            if group.rank == 0:
                say(f"loss step {step - 1} {loss.hex()}")
                if args.checkpoint and step % args.checkpoint_every == 0:
                    save_checkpoint(args.checkpoint, state_of(model, optimizer, step))
            if step % 10 == 0:
                say(f"rank {group.rank} pid {os.getpid()} step {step}")
            time.sleep(args.step_ms / 1000)
            continue
        # Out of the except block, whose traceback held the failed DDP module: dropping it drops
        # its autograd hooks on the parameters.
        ddp = None
        say(f"rank {group.rank}: step {step} failed ({failure}); recovering")
        step = recover(group, model, optimizer, step)
        say(f"rank {group.rank} of {group.size} resumes at step {step}")
    print_final(group.rank, step, model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=48,
                        help="the global batch; a multiple of every world size the job runs at")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step-ms", type=int, default=0,
                        help="a pause per step, to make a run long enough to kill a rank in")
    parser.add_argument("--checkpoint", help="rank 0 saves here; a run finding it resumes")
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--reference", action="store_true",
                        help="one process, no distribution: the numbers to reproduce")
    args = parser.parse_args()
    for name in ("steps", "batch", "checkpoint_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if SAMPLES % args.batch:
        parser.error(f"--batch must divide the {SAMPLES} samples")
    reference(args) if args.reference else train(args)
    sys.stdout.flush()
    # Debian's torch 1.13 can deadlock at interpreter shutdown after DDP.
    os._exit(0)


if __name__ == "__main__":
    main()
