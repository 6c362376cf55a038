// The pairs' bandwidth as an SVG heatmap: row = sending host, column = receiving host, each cell
// coloured by its direction's fraction of the median (red below the threshold, yellow near it,
// green at or above the median), unmeasured pairs grey, the value in the cell.
#pragma once

#include <string>

#include "tools/tutti-validate/report.hpp"

namespace tutti::validate {

std::string heatmapSvg(const Report& report);

}  // namespace tutti::validate
