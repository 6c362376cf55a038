// bucketing/bucketing.hpp: the bucketing layer's API — gradient averaging for
// data-parallel training (Reducer), its communication hooks and the initial state sync. Built on
// tutti's public API only (tutti/tutti.h, tutti/tutti.hpp).
#pragma once

#include "bucketing/bucket_assignment.hpp"
#include "bucketing/comm_hook.hpp"
#include "bucketing/reducer.hpp"
#include "bucketing/state_sync.hpp"
#include "bucketing/tensor.hpp"
