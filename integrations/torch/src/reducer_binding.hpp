// tutti's own Reducer (bucketing, PyTorch DDP's bucketing in C++) for Python, which
// tutti_torch.DistributedDataParallel drives from gradient-accumulator hooks.
#pragma once

#include <pybind11/pybind11.h>

namespace tutti_torch {

void bindReducer(pybind11::module& module);

}  // namespace tutti_torch
