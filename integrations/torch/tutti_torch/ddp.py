"""A DistributedDataParallel over tutti's own Reducer (bucketing) instead of torch's.

Gradients are averaged in buckets, all-reduced asynchronously strictly in bucket order while
backward goes on, as torch's DDP does; the point is to measure tutti's overlap against torch's
reducer (bench/ddp-step). Supported, with torch's semantics: float32/float64 CPU parameters,
no_sync, find_unused_parameters (found by walking the autograd graph from the forward's output,
as torch does), gradient_as_bucket_view, broadcast_buffers (rank 0's buffers, such as batch-norm
statistics, copied to every rank before a forward, as torch decides), and the built-in
communication hooks through
register_comm_hook (torch's allreduce_hook, fp16_compress_hook, bf16_compress_hook, or their
names "allreduce", "fp16", "bf16"), which run in C++. Not supported: other Python hooks, static
graphs, sparse or device gradients. Differences from torch are listed in docs/torch.md.
"""
import math
from contextlib import contextmanager
from typing import Callable, Iterator, List, Optional, Union

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.autograd import Variable
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel.distributed import _find_tensors

from ._C import ProcessGroupTutti, Reducer, sync_module_states

MIB = 1 << 20

# torch's default hooks, which tutti's Reducer implements in C++, by the names it knows them by.
_BUILTIN_HOOKS = {
    default_hooks.allreduce_hook: "allreduce",
    default_hooks.fp16_compress_hook: "fp16",
    default_hooks.bf16_compress_hook: "bf16",
}


class DistributedDataParallel(nn.Module):
    def __init__(self, module: nn.Module, process_group: Optional[ProcessGroupTutti] = None,
                 bucket_cap_mb: float = 25, first_bucket_mb: float = 1,
                 find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False, broadcast_buffers: bool = True) -> None:
        super().__init__()
        group = process_group or dist.distributed_c10d._get_default_group()
        if not isinstance(group, ProcessGroupTutti):
            raise TypeError("tutti_torch.DistributedDataParallel needs a tutti process group, "
                            f"got {type(group).__name__}")
        for name, mib in (("bucket_cap_mb", bucket_cap_mb), ("first_bucket_mb", first_bucket_mb)):
            if not (isinstance(mib, (int, float)) and math.isfinite(mib) and mib >= 0):
                raise ValueError(f"tutti_torch.DistributedDataParallel: {name} must be a finite "
                                 f"number of MiB, 0 or more; got {mib!r}")
        # Refused here, not half-way through the first backward.
        sparse = [name for name, m in module.named_modules()
                  if isinstance(m, (nn.Embedding, nn.EmbeddingBag)) and m.sparse]
        if sparse:
            raise ValueError("tutti_torch.DistributedDataParallel does not support sparse "
                             f"gradients; {', '.join(sparse)} make them (sparse=True)")
        self.module = module
        self.process_group = group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.broadcast_buffers = broadcast_buffers
        # torch's rule: buffers are broadcast before a forward that follows a synchronising one
        # (or comes first), not after a no_sync() or no-grad forward.
        self._require_forward_param_sync = True
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        self._parameters_in_order = [p for _, p in named]
        states = list(module.state_dict().items())
        sync_module_states(group, [t for _, t in states], [name for name, _ in states])
        # The reducer reads each gradient from, and writes its average to, its storage: a buffer
        # of ours, or with gradient_as_bucket_view the gradient's place in its bucket (then the
        # reducer takes only the parameters' shapes and dtypes). The storage becomes the
        # parameter's .grad, which autograd accumulates into in place.
        buffers = [] if gradient_as_bucket_view else [
            torch.zeros_like(p) for p in self._parameters_in_order]
        self._reducer = Reducer(
            group, self._parameters_in_order if gradient_as_bucket_view else buffers,
            [name for name, _ in named], int(bucket_cap_mb * MIB), int(first_bucket_mb * MIB),
            find_unused_parameters, gradient_as_bucket_view)
        self._storage: List[torch.Tensor] = (
            self._bucket_views() if gradient_as_bucket_view else buffers)
        self._hook_registered = False
        self._finalize_queued = False
        # Hooks on the gradient accumulators fire once a parameter's gradient is complete.
        self._accumulators = []
        for index, parameter in enumerate(self._parameters_in_order):
            accumulator = parameter.expand_as(parameter).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._make_ready_hook(index))
            self._accumulators.append(accumulator)

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and self._require_forward_param_sync:
            self._broadcast_buffers()
        output = self.module(*inputs, **kwargs)
        self._require_forward_param_sync = (torch.is_grad_enabled() and
                                            self._reducer.sync_enabled())
        if self._require_forward_param_sync:
            self._prepare_for_backward(output)
        return output

    def _broadcast_buffers(self) -> None:
        """Rank 0's buffers everywhere, read from the module each time (they may have been
        reassigned), as torch's _sync_buffers; construction already checked the shapes."""
        named = list(self.module.named_buffers())
        if named:
            with torch.no_grad():
                sync_module_states(self.process_group, [b for _, b in named],
                                   [name for name, _ in named], verify=False)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradients accumulate locally; the next synchronised backward averages the sums."""
        self._reducer.set_sync(False)
        try:
            yield
        finally:
            self._reducer.set_sync(True)

    def register_comm_hook(self, state: object, hook: Union[str, Callable]) -> None:
        """torch's DistributedDataParallel.register_comm_hook for the built-in hooks: `hook` is
        torch's allreduce_hook, fp16_compress_hook or bf16_compress_hook, or its name
        ("allreduce", "fp16", "bf16"); `state` is None or this module's process group. Once,
        before the first forward."""
        if state is not None and state is not self.process_group:
            raise ValueError("tutti_torch.DistributedDataParallel.register_comm_hook: the hook "
                             "reduces over the module's own process group; state must be None "
                             "or that group")
        if self._hook_registered:
            raise RuntimeError("register_comm_hook can only be called once")
        name = hook if isinstance(hook, str) else _BUILTIN_HOOKS.get(hook)
        if name is None:
            raise TypeError(f"tutti's Reducer runs its hooks in C++ and cannot call {hook!r}: "
                            "pass torch's allreduce_hook, fp16_compress_hook or "
                            "bf16_compress_hook (default_hooks), or 'allreduce', 'fp16', 'bf16'")
        self._reducer.set_comm_hook(name)
        self._hook_registered = True

    def stats(self) -> dict:
        """The last synchronised iteration: backward_compute_ms, comm_ms, exposed_comm_ms,
        bucket_bytes."""
        return self._reducer.stats()

    def bucket_assignment(self) -> List[List[int]]:
        return self._reducer.bucket_assignment()

    def _bucket_views(self) -> List[torch.Tensor]:
        """As torch at bucket (re)building: a gradient that exists moves into its place in the
        bucket, which becomes its .grad. (At the rebuild the reducer has moved the values
        already: that copy, once, is redundant.)"""
        views = [self._reducer.gradient_view(i) for i in range(len(self._parameters_in_order))]
        for parameter, view in zip(self._parameters_in_order, views):
            if parameter.grad is not None:
                view.copy_(parameter.grad)
                parameter.grad = view
        return views

    def _prepare_for_backward(self, output) -> None:
        unused = self._unused_parameters(output) if self.find_unused_parameters else []
        rebuilt = self._reducer.has_rebuilt_buckets()
        self._reducer.prepare(unused)  # rebuilds the buckets after the first iteration
        if self.gradient_as_bucket_view and rebuilt != self._reducer.has_rebuilt_buckets():
            self._storage = self._bucket_views()
        self._finalize_queued = False

    def _unused_parameters(self, output) -> List[int]:
        """The parameters whose gradient accumulators the autograd graph of output does not
        reach: torch's Reducer::search_unused_parameters."""
        seen = set()
        queue = [t.grad_fn for t in _find_tensors(output) if t.grad_fn is not None]
        while queue:
            for node, _ in queue.pop().next_functions:
                if node is not None and node not in seen:
                    seen.add(node)
                    queue.append(node)
        return [i for i, accumulator in enumerate(self._accumulators) if accumulator not in seen]

    def _make_ready_hook(self, index: int):
        def ready(*_unused) -> None:
            if not self._reducer.sync_enabled():
                return
            if not self._finalize_queued:
                # Runs when this backward pass ends: wait for the buckets, write the averages.
                Variable._execution_engine.queue_callback(self._finalize)
                self._finalize_queued = True
            self._stage(index)
            self._reducer.mark_ready(index)
        return ready

    def _stage(self, index: int) -> None:
        """Makes the reducer's storage the parameter's .grad, holding its gradient: autograd
        made a new one if .grad was None (zero_grad(set_to_none=True), or the first backward)."""
        parameter, storage = self._parameters_in_order[index], self._storage[index]
        if parameter.grad is storage:
            return
        if parameter.grad is None:  # the engine gave the accumulator no gradient
            storage.zero_()
        else:
            storage.copy_(parameter.grad)
        parameter.grad = storage

    def _finalize(self) -> None:
        self._reducer.finalize()
        # Parameters that got no gradient here but did elsewhere now have the average, as in
        # torch; those that no rank used keep their .grad (None included) untouched.
        unused = set(self._reducer.unused_everywhere())
        for index, (parameter, storage) in enumerate(zip(self._parameters_in_order,
                                                         self._storage)):
            if index not in unused and parameter.grad is not storage:
                parameter.grad = storage
