// How the ranks of a process group find each other: through the c10d Store PyTorch passes to the
// backend (already prefixed per group), not through tutti's launcher variables, so any way
// torch.distributed initialises (env://, tcp://, file://, new_group) works.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "tutti/tutti.h"

namespace tutti_torch {

// Rank 0 creates a tutti unique id (and hosts its rendezvous) and publishes it; the others read
// it (waiting up to the store's timeout). Collective over the group.
tuttiComm_t connectThroughStore(c10d::Store& store, int rank, int size);

}  // namespace tutti_torch
