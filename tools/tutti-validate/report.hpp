// What tutti-validate says: a summary that starts with what is wrong, one verdict line per host,
// the pairs' table; and the JSON report (schema in docs/validate.md).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/tutti-validate/verdict.hpp"

namespace tutti::validate {

struct Report {
  std::vector<std::string> hosts;
  std::vector<PairResult> pairs;
  Verdict verdict;
  Thresholds thresholds;
  std::optional<double> allreduceBusGBs;
  std::vector<RailResult> rails;  // the all-reduce per rail, when measured
  std::string mode;               // "quick" or "full"
};

std::string formatReport(const Report& report);
nlohmann::json reportJson(const Report& report);

}  // namespace tutti::validate
