"""Training that goes on when a rank dies: the survivors shrink their process group past the dead
and, under ``tuttirun --elastic N``, grow it back with the replacement tuttirun starts, which is
handed the model and optimizer state by broadcast. No restart of the others, no checkpoint
needed for data-parallel state (every survivor holds it).

    group = ElasticGroup()                 # joins the survivors when this is a replacement
    ... build model, optimizer ...
    if group.joined:
        load(group.sync_state(None))       # the survivors' state
    ddp = None
    while step < steps:
        try:
            ddp = ddp or DistributedDataParallel(model, process_group=group.group)
            one_step(ddp, ...)             # changes no state until its collectives succeeded
            continue
        except RuntimeError:               # a peer died: the error names it
            pass
        ddp = None                         # out of the except: its autograd hooks go with it
        group.recover()
        load(group.sync_state(state))      # rank 0's state everywhere; redo the step

After a recovery the group is not torch.distributed's default group: pass ``group.group`` to
DDP, to collectives (``group=``) and take ``group.rank``/``group.size`` (the sampler's
num_replicas and rank), not ``dist.get_rank()``. Protocol and limits: docs/elastic.md.
"""
import io
import json
import os
import time
from datetime import timedelta
from typing import Any, BinaryIO, List, Optional, Union

import torch
import torch.distributed as dist

from ._C import ProcessGroupTutti

__all__ = ["ElasticGroup", "save_state", "load_state", "write_grow_token", "await_grow_token"]

TOKEN_PATIENCE_S = 300


def write_grow_token(path: str, token: bytes) -> None:
    """Writes a grow token where a newcomer waits for it: whole (a temporary file renamed) and
    readable by this user only (it carries the job's secret)."""
    partial = path + ".partial"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(token)
    os.rename(partial, path)


def await_grow_token(path: str, patience_s: float = TOKEN_PATIENCE_S) -> bytes:
    """The token at path, once it appears; an error naming the file after patience_s."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            with open(path, "rb") as token:
                return token.read()
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no grow token appeared in {path} within {patience_s} s")
            time.sleep(0.02)


def _encoded(value: Any, tensors: List[torch.Tensor]) -> Any:
    """value as JSON, its tensors moved to tensors (by index). torch 1.13's weights_only loader
    refuses floats, which every optimizer state holds: the tensors travel through it, the rest
    as JSON (floats exact: Python writes the shortest repr that reads back the same)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1}
    if isinstance(value, dict):
        return {"dict": [[_encoded(k, tensors), _encoded(v, tensors)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_encoded(v, tensors) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"tutti_torch.elastic.sync_state cannot send a {type(value).__name__}: "
                    "state holds tensors, numbers, strings, None, lists, tuples and dicts")


def _decoded(form: Any, tensors: List[torch.Tensor]) -> Any:
    (kind, body), = form.items()
    if kind == "tensor":
        return tensors[body]
    if kind == "dict":
        return {_decoded(k, tensors): _decoded(v, tensors) for k, v in body}
    if kind in ("list", "tuple"):
        items = [_decoded(v, tensors) for v in body]
        return items if kind == "list" else tuple(items)
    return body


def save_state(state: Any, file: Union[str, BinaryIO]) -> None:
    """Writes state (tensors, numbers, strings, None, lists, tuples, dicts: a model's and an
    optimizer's state_dict, say) to a path or binary file, in a form load_state reads without
    unpickling anything but tensors."""
    tensors: List[torch.Tensor] = []
    torch.save({"skeleton": json.dumps(_encoded(state, tensors)), "tensors": tensors}, file)


def load_state(file: Union[str, BinaryIO]) -> Any:
    """What save_state wrote. weights_only: what arrives is data, never code to run, even from a
    peer or a file someone else could have written."""
    saved = torch.load(file, weights_only=True)
    return _decoded(json.loads(saved["skeleton"]), saved["tensors"])


def _environment_number(name: str) -> int:
    value = os.environ.get(name)
    if value is None or not value.isdigit():
        raise ValueError(f"tutti_torch.elastic: {name} must be a non-negative integer, "
                         f"got {value!r}")
    return int(value)


class ElasticGroup:
    """A tutti process group that recover() replaces after a death.

    Started normally, it is torch.distributed's default group (init_process_group("tutti") is
    called unless done already). Started by tuttirun --elastic as a replacement
    (TUTTI_GROW_TOKEN_FILE set), it joins the survivors as TUTTI_RANK of TUTTI_WORLD_SIZE and
    ``joined`` is True: take the state with sync_state before training."""

    def __init__(self, timeout: Optional[timedelta] = None) -> None:
        token_file = os.environ.get("TUTTI_GROW_TOKEN_FILE")
        self.joined = token_file is not None
        self._grows = 0  # recoveries that grew back: the next token's file is grow-<n+1>.token
        if self.joined:
            rank = _environment_number("TUTTI_RANK")
            size = _environment_number("TUTTI_WORLD_SIZE")
            self.group = ProcessGroupTutti.join(await_grow_token(token_file), rank, size, timeout)
        else:
            if not dist.is_initialized():
                dist.init_process_group("tutti", **({"timeout": timeout} if timeout else {}))
            self.group = dist.group.WORLD
            if not isinstance(self.group, ProcessGroupTutti):
                raise TypeError("tutti_torch.elastic.ElasticGroup needs tutti as the default "
                                f"group's backend, not {type(self.group).__name__}")

    @property
    def rank(self) -> int:
        return self.group.rank()

    @property
    def size(self) -> int:
        return self.group.size()

    def recover(self) -> None:
        """Every survivor calls it after a failure: the group shrinks past the ranks found dead
        and, under tuttirun --elastic, grows back to TUTTI_WORLD_SIZE with the replacement
        (survivor rank 0 writes the grow token to $TUTTI_ELASTIC_DIR/grow-<k>.token, where
        tuttirun told the k-th replacement to wait). Ranks are renumbered in order; follow with
        sync_state."""
        survivors = self.group.shrink(dead=True)
        self.group = survivors
        elastic_dir = os.environ.get("TUTTI_ELASTIC_DIR")
        if elastic_dir is None:
            return
        self._grows += 1
        if survivors.rank() == 0:
            write_grow_token(os.path.join(elastic_dir, f"grow-{self._grows}.token"),
                             survivors.grow_token())
        self.group = survivors.grow(_environment_number("TUTTI_WORLD_SIZE"))

    def sync_state(self, state: Any) -> Any:
        """Rank 0's state on every rank (others pass anything, None included): tensors, numbers,
        strings, lists and dicts, such as a model's and an optimizer's state_dict(). After a
        death some ranks may have finished a step the others failed; that step's average was the
        whole world's, so rank 0's state is right wherever it stands."""
        payload = io.BytesIO()
        if self.rank == 0:
            try:
                save_state({"grows": self._grows, "state": state}, payload)
            except BaseException:
                # The others are waiting for the size: tell them there is nothing to wait for.
                self._broadcast(torch.tensor([-1], dtype=torch.int64))
                raise
        size = torch.tensor([payload.getbuffer().nbytes], dtype=torch.int64)
        self._broadcast(size)
        if size.item() < 0:
            raise RuntimeError("tutti_torch.elastic.sync_state: rank 0 could not send its state "
                               "(its own error says why)")
        data = torch.frombuffer(bytearray(payload.getbuffer()), dtype=torch.uint8) \
            if self.rank == 0 else torch.empty(int(size.item()), dtype=torch.uint8)
        self._broadcast(data)
        whole = load_state(io.BytesIO(data.numpy().tobytes()))
        self._grows = whole["grows"]
        return whole["state"]

    def _broadcast(self, tensor: torch.Tensor) -> None:
        # dist.broadcast translates the root through the default group's rank table, which a
        # shrunk or grown group is not in: ask the group itself.
        options = dist.BroadcastOptions()
        options.rootRank = 0
        self.group.broadcast([tensor], options).wait()
