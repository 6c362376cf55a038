"""What the bad-input tests check on every mistake: the error a rank gets for its own mistake,
and that the group still works afterwards (nothing reached the peers)."""
from typing import Callable, Type

import torch
import torch.distributed as dist


def expect_error(words: str, call: Callable[[], object],
                 kind: Type[BaseException] = RuntimeError) -> None:
    try:
        call()
    except kind as error:
        assert words in str(error), f"expected '{words}' in: {error}"
        where = f"rank {dist.get_rank()}" if dist.is_initialized() else "here"
        print(f"{where}: as expected: {kind.__name__}: {str(error).splitlines()[0]}")
        return
    raise AssertionError(f"no {kind.__name__}; expected one saying '{words}'")


def group_still_works(rank: int, size: int) -> None:
    """An all_reduce of CPU tensors in the default group gives the right sum."""
    tensor = torch.full((4,), float(rank + 1))
    dist.all_reduce(tensor)
    assert torch.equal(tensor, torch.full((4,), float(size * (size + 1) // 2))), tensor
