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

from ._C import ProcessGroupTutti, registered_allocator_stats, registered_bytes
from ._C import disable_registered_allocator
from ._C import enable_registered_allocator as _enable_registered_allocator

__all__ = ["ProcessGroupTutti", "registered_zeros", "enable_registered_allocator",
           "disable_registered_allocator", "registered_allocator_stats"]


def registered_zeros(*size, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A zero-filled CPU tensor in tutti's registered memory (tutti_mem_alloc). When every rank
    of a one-host group all-reduces such tensors (256 KiB and up), each process reads the others'
    tensors in place (tutti's direct algorithm) instead of copying through shared-memory FIFOs:
    about twice the bandwidth. Keep reusing the tensor (in-place ops, copy_) rather than
    replacing it, since results of out-of-place ops live in ordinary memory."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    shape = torch.Size(size)
    itemsize = torch.empty((), dtype=dtype).element_size()
    return registered_bytes(shape.numel() * itemsize).view(dtype).view(shape)


def enable_registered_allocator(min_bytes: int = 1 << 20, max_cached_bytes: int = 1 << 30) -> None:
    """Makes torch allocate CPU tensors of min_bytes and more in tutti's registered memory, so
    that the tensors torch creates itself, DistributedDataParallel's gradient buckets among them,
    are all-reduced by tutti's direct algorithm. Freed blocks are kept for reuse up to
    max_cached_bytes. Smaller tensors, and those the system refuses (registered_allocator_stats()
    counts them as fallbacks), come from torch's own allocator. Registered memory is shared with
    processes forked afterwards, as after Tensor.share_memory_(): enable it after starting
    DataLoader workers, or leave it off if they write to tensors they inherit. Calling it again
    changes the limits; disable_registered_allocator() restores torch's allocator."""
    for name, value in (("min_bytes", min_bytes), ("max_cached_bytes", max_cached_bytes)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"enable_registered_allocator: {name} must be an int, not "
                            f"{type(value).__name__}")
    if min_bytes <= 0:
        raise ValueError(f"enable_registered_allocator: min_bytes must be positive, not {min_bytes}")
    if max_cached_bytes < 0:
        raise ValueError("enable_registered_allocator: max_cached_bytes must not be negative, not "
                         f"{max_cached_bytes}")
    _enable_registered_allocator(min_bytes, max_cached_bytes)


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
