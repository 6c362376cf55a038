"""tutti_torch's elastic groups through Python, with 3 processes: rank 0's state to every rank
(sync_state; a state it cannot send fails every rank), the survivors of an explicit exclusion
shrink and compute, the excluded process comes back as a newcomer through a grow token, and the
grown group computes; every refused argument named. Then, in this process, save_state/load_state
against random states and a file that would run code. Deaths (SIGKILL) and tuttirun --elastic
are the faults driver's, with examples/elastic_ddp.py (the suite's elastic tests)."""
import hashlib
import io
import math
import os
import pickle
import random
import sys
import tempfile
from datetime import timedelta
from typing import List

import torch
import torch.distributed as dist

import world
from mistakes import expect_error


def seeded(rank: int, count: int = 1000) -> torch.Tensor:
    return torch.randn(count, dtype=torch.float64,
                       generator=torch.Generator().manual_seed(1000 + rank))


def check_sum(group, members: List[int]) -> None:
    """An all-reduce over group of each member's seeded tensor equals the sum computed here in
    member order (exact comparison is wrong for floats summed in another order: tolerance)."""
    tensor = seeded(members[group.rank()])
    dist.all_reduce(tensor, group=group)
    expected = sum((seeded(m) for m in members), torch.zeros(1000, dtype=torch.float64))
    assert torch.allclose(tensor, expected, rtol=1e-12, atol=1e-12), (tensor - expected).abs().max()


def state_from_rank0(elastic) -> None:
    rank = elastic.rank
    mine = {"step": rank, "lr": 0.1 * (rank + 1), "weights": seeded(rank), 3: (None, True, "x")}
    got = elastic.sync_state(mine)
    assert got["step"] == 0 and got["lr"] == 0.1 and got[3] == (None, True, "x"), got
    assert torch.equal(got["weights"], seeded(0))
    if rank == 0:
        expect_error("cannot send a set", lambda: elastic.sync_state({"bad": {1, 2}}), TypeError)
    else:
        expect_error("rank 0 could not send its state", lambda: elastic.sync_state(None))


def refusals(group) -> None:
    from tutti_torch import ProcessGroupTutti

    size, newcomer = group.size(), group.size()
    refused = [
        (f"exclude_ranks names rank {size}, out of range",
         lambda: group.shrink(exclude=[size], dead=False)),
        ("names this rank itself", lambda: group.shrink(exclude=[group.rank()])),
        (f"new_size {size} is not larger", lambda: group.grow(size)),
        ("the grow token has 5 bytes, not 128",
         lambda: ProcessGroupTutti.join(b"short", newcomer, size + 1)),
        ("timeout must be at least 1 ms",
         lambda: ProcessGroupTutti.join(bytes(128), newcomer, size + 1, timedelta(0))),
        ("not a tutti unique id", lambda: ProcessGroupTutti.join(bytes(128), newcomer, size + 1)),
    ]
    for words, call in refused:
        expect_error(words, call, ValueError)


def forged(token: bytes) -> bytes:
    """token with another secret: what a stranger who found the rendezvous and the join key, but
    not the job's secret, could make (a valid id: its checksum redone; layout in
    runtime/bootstrap/unique_id.cpp)."""
    secret_at, secret_bytes, checksum_at = 12, 16, 120
    body = bytearray(token[:checksum_at])
    body[secret_at:secret_at + secret_bytes] = bytes(random.Random(7).randrange(256)
                                                     for _ in range(secret_bytes))
    return bytes(body) + hashlib.blake2b(bytes(body), digest_size=16).digest()[:8]


def worker(args: List[str]) -> None:
    from tutti_torch import ProcessGroupTutti
    from tutti_torch.elastic import ElasticGroup, await_grow_token, write_grow_token

    token_path = os.path.join(args[0], "grow.token")
    elastic = ElasticGroup()
    rank = elastic.rank
    world_group = elastic.group
    state_from_rank0(elastic)
    refusals(world_group)
    check_sum(world_group, [0, 1, 2])
    if rank == 2:  # excluded by the others; comes back as a newcomer
        token = await_grow_token(token_path)
        expect_error("cannot join the store", lambda: ProcessGroupTutti.join(forged(token), 2, 3))
        grown = ProcessGroupTutti.join(token, 2, 3)
    else:
        survivors = world_group.shrink(exclude=[2], dead=False)
        assert (survivors.rank(), survivors.size()) == (rank, 2)
        check_sum(survivors, [0, 1])
        expect_error("was shrunk", lambda: dist.all_reduce(torch.ones(2)))
        if rank == 0:
            write_grow_token(token_path, survivors.grow_token())
            assert os.stat(token_path).st_mode & 0o777 == 0o600
        grown = survivors.grow(3)
    assert (grown.rank(), grown.size()) == (rank, 3)
    check_sum(grown, [0, 1, 2])
    grown.barrier().wait()  # rank 0 hosts the store: nobody leaves while another still needs it
    print(f"rank {rank}: shrunk, grown back, every sum right")


class Runs:
    """A class whose unpickling runs code: load_state must refuse it."""
    ran = False

    def __reduce__(self):
        return (setattr, (Runs, "ran", True))


def random_state(rng: random.Random, depth: int = 0):
    kinds = ["tensor", "int", "float", "str", "none", "bool"] + (
        ["dict", "list", "tuple"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "tensor":
        dtype = rng.choice([torch.float32, torch.float64, torch.int64, torch.bfloat16])
        return (torch.randn(rng.randrange(0, 5), generator=torch.Generator().manual_seed(
            rng.randrange(1 << 30))) * 100).to(dtype)
    if kind == "dict":
        return {rng.choice([rng.randrange(100), f"k{rng.randrange(100)}"]):
                random_state(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind in ("list", "tuple"):
        items = [random_state(rng, depth + 1) for _ in range(rng.randrange(4))]
        return items if kind == "list" else tuple(items)
    return {"int": rng.randrange(-1 << 40, 1 << 40), "str": f"s{rng.random()}",
            "float": rng.choice([rng.uniform(-1e6, 1e6), math.inf, -0.0, 5e-324]),
            "none": None, "bool": rng.random() < 0.5}[kind]


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return (isinstance(b, dict) and list(a) == list(b) and
                all(same(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b)) and \
        (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


def check_state_files() -> None:
    from tutti_torch.elastic import load_state, save_state

    rng = random.Random(20261203)
    for _ in range(200):
        state = random_state(rng)
        buffer = io.BytesIO()
        save_state(state, buffer)
        buffer.seek(0)
        assert same(state, load_state(buffer)), state
    buffer = io.BytesIO()
    torch.save({"skeleton": "{}", "tensors": [Runs()]}, buffer)
    buffer.seek(0)
    expect_error("Weights only load failed", lambda: load_state(buffer), pickle.UnpicklingError)
    assert not Runs.ran
    print("save_state/load_state: 200 random states round-trip; a pickled call is refused")


if __name__ == "__main__":
    import tutti_torch  # noqa: F401  registers the backend

    if world.is_worker():
        # The world group is shrunk on purpose: the worker ends with a barrier on the grown one.
        world.worker_main(worker, final_barrier=False)
    check_state_files()
    with tempfile.TemporaryDirectory() as scratch:
        ok, outputs = world.run_world(__file__, 3, [scratch])
    # The store (rank 0's) names the stranger it dropped.
    named = "(claiming rank 2 of 3, " in outputs[0] and "did not prove the job secret" in outputs[0]
    print("rank 0's store named the stranger" if named else
          "FAIL: rank 0's store did not name the stranger")
    sys.exit(0 if ok and named else 1)
