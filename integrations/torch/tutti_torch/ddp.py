"""A DistributedDataParallel over tutti's own Reducer (runtime/bucketing) instead of torch's.

Gradients are averaged in buckets, all-reduced asynchronously strictly in bucket order while
backward goes on, as torch's DDP does; the point is to measure tutti's overlap against torch's
reducer (bench/ddp-step). Supported: float32/float64 CPU parameters, no_sync. Not (yet):
find_unused_parameters, gradient_as_bucket_view, communication hooks from Python.
"""
from contextlib import contextmanager
from typing import Iterator, List, Optional

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.autograd import Variable

from ._C import ProcessGroupTutti, Reducer, sync_module_states

MIB = 1 << 20


class DistributedDataParallel(nn.Module):
    def __init__(self, module: nn.Module, process_group: Optional[ProcessGroupTutti] = None,
                 bucket_cap_mb: float = 25, first_bucket_mb: float = 1) -> None:
        super().__init__()
        group = process_group or dist.distributed_c10d._get_default_group()
        if not isinstance(group, ProcessGroupTutti):
            raise TypeError("tutti_torch.DistributedDataParallel needs a tutti process group, "
                            f"got {type(group).__name__}")
        self.module = module
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        self._parameters_in_order = [p for _, p in named]
        states = list(module.state_dict().items())
        sync_module_states(group, [t for _, t in states], [name for name, _ in states])
        # The reducer reads and writes these buffers in place: they are the parameters' .grad,
        # which autograd accumulates into (and zero_grad() zeroes) without replacing them.
        self._gradients: List[torch.Tensor] = [torch.zeros_like(p) for p in
                                               self._parameters_in_order]
        self._attach_gradients()
        self._reducer = Reducer(group, self._gradients, [name for name, _ in named],
                                int(bucket_cap_mb * MIB), int(first_bucket_mb * MIB))
        self._finalize_queued = False
        # Hooks on the gradient accumulators fire once a parameter's gradient is complete.
        self._accumulators = []
        for index, parameter in enumerate(self._parameters_in_order):
            accumulator = parameter.expand_as(parameter).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._make_ready_hook(index))
            self._accumulators.append(accumulator)

    def forward(self, *inputs, **kwargs):
        if torch.is_grad_enabled() and self._reducer.sync_enabled():
            self._attach_gradients()
            self._reducer.prepare()
            self._finalize_queued = False
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradients accumulate locally; the next synchronised backward averages the sums."""
        self._reducer.set_sync(False)
        try:
            yield
        finally:
            self._reducer.set_sync(True)

    def stats(self) -> dict:
        """The last synchronised iteration: backward_compute_ms, comm_ms, exposed_comm_ms,
        bucket_bytes."""
        return self._reducer.stats()

    def bucket_assignment(self) -> List[List[int]]:
        return self._reducer.bucket_assignment()

    def _attach_gradients(self) -> None:
        # zero_grad(set_to_none=True) drops .grad; put the reducer's buffer back, zeroed.
        for parameter, gradient in zip(self._parameters_in_order, self._gradients):
            if parameter.grad is not gradient:
                gradient.zero_()
                parameter.grad = gradient

    def _make_ready_hook(self, index: int):
        def ready(*_unused) -> None:
            if not self._reducer.sync_enabled():
                return
            if not self._finalize_queued:
                # Runs when this backward pass ends: wait for the buckets, write the averages.
                Variable._execution_engine.queue_callback(self._reducer.finalize)
                self._finalize_queued = True
            self._reducer.mark_ready(index)
        return ready
