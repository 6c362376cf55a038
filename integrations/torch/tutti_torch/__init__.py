"""tutti as a torch.distributed backend.

Importing this package registers the backend "tutti", so that
``torch.distributed.init_process_group("tutti")`` works under torchrun's variables (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and under tutti's own launcher ``tuttirun``, whose
variables (TUTTI_RANK, ...) are copied to torchrun's names when those are unset.
"""
import os
from datetime import timedelta

import torch.distributed as dist
from torch.distributed.constants import default_pg_timeout

from ._C import ProcessGroupTutti

__all__ = ["ProcessGroupTutti"]

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
