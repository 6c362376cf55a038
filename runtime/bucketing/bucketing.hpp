// runtime/bucketing/bucketing.hpp: the bucketing layer's API — gradient averaging for
// data-parallel training (Reducer), its communication hooks and the initial state sync. Built on
// tutti's public API only (tutti/tutti.h, tutti/tutti.hpp).
#pragma once

#include "runtime/bucketing/bucket_assignment.hpp"
#include "runtime/bucketing/comm_hook.hpp"
#include "runtime/bucketing/reducer.hpp"
#include "runtime/bucketing/state_sync.hpp"
#include "runtime/bucketing/tensor.hpp"
