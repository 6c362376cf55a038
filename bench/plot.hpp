// --plot: bus bandwidth against message size as a hand-written SVG: one line per series (an
// algorithm, type, op and root of the run), a log-scale size axis, labelled axes and a legend.
#pragma once

#include <string>

#include "bench/results.hpp"

namespace tutti::bench {

// The out-of-place busbw of every row; title heads the plot.
std::string plotSvg(const Results& results, const std::string& title);
void writePlot(const std::string& path, const Results& results, const std::string& title);

}  // namespace tutti::bench
