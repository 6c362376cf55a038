"""tutti as a torch.distributed backend.

Importing this package registers the backend "tutti", so that
``torch.distributed.init_process_group("tutti")`` works under torchrun's variables (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and under tutti's own launcher ``tuttirun``, whose
variables (TUTTI_RANK, ...) are copied to torchrun's names when those are unset.
"""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.constants import default_pg_timeout

from ._C import ProcessGroupTutti, registered_bytes

__all__ = ["ProcessGroupTutti", "registered_zeros"]


def registered_zeros(*size, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A zero-filled CPU tensor in tutti's registered memory (tutti_mem_alloc). When every rank
    of a one-host group all-reduces such tensors (512 KiB and up), each process reads the others'
    tensors in place (tutti's direct algorithm) instead of copying through shared-memory FIFOs:
    about twice the bandwidth. Keep reusing the tensor (in-place ops, copy_) rather than
    replacing it, since results of out-of-place ops live in ordinary memory."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    shape = torch.Size(size)
    itemsize = torch.empty((), dtype=dtype).element_size()
    return registered_bytes(shape.numel() * itemsize).view(dtype).view(shape)

_TUTTIRUN_TO_TORCHRUN = {
    "TUTTI_RANK": "RANK",
    "TUTTI_WORLD_SIZE": "WORLD_SIZE",
    "TUTTI_LOCAL_RANK": "LOCAL_RANK",
    "TUTTI_ADDR": "MASTER_ADDR",
    "TUTTI_PORT": "MASTER_PORT",
}


def _adopt_tuttirun_environment() -> None:
    # torch's env:// rendezvous reads torchrun's names; under tuttirun only TUTTI_* are set.
    # Rank 0's TCPStore then listens on TUTTI_PORT, which tuttirun picked free for rank 0.
    for tutti_name, torch_name in _TUTTIRUN_TO_TORCHRUN.items():
        if tutti_name in os.environ and torch_name not in os.environ:
            os.environ[torch_name] = os.environ[tutti_name]


def _create_process_group(store: dist.Store, rank: int, size: int,
                          timeout: timedelta) -> ProcessGroupTutti:
    # torch always passes a timeout: default_pg_timeout (30 min) when the caller gave none. That
    # one leaves TUTTI_TIMEOUT (default 300 s) in force; any other becomes the group's stall
    # timeout: an operation that makes no progress for that long fails (docs/torch.md).
    given = None if timeout == default_pg_timeout else timeout
    return ProcessGroupTutti(store, rank, size, given)


_adopt_tuttirun_environment()
if "TUTTI" not in dist.Backend._plugins:
    dist.Backend.register_backend("tutti", _create_process_group)
