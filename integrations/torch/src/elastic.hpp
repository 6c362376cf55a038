// Elastic process groups for Python: a group's survivors shrink past the dead, members grow it
// back with newcomers (tutti_comm_shrink, tutti_comm_grow; docs/elastic.md). Each returns a new
// ProcessGroupTutti over the new communicator; tutti_torch.elastic builds the training-loop
// protocol on these.
#pragma once

#include <pybind11/pybind11.h>

#include "integrations/torch/src/process_group_tutti.hpp"

namespace tutti_torch {

using GroupClass =
    pybind11::class_<ProcessGroupTutti, GroupBase, c10::intrusive_ptr<ProcessGroupTutti>>;

void bindElastic(GroupClass& group);

}  // namespace tutti_torch
