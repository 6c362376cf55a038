#include "runtime/collectives/allreduce_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace tutti::runtime {
namespace {

// What ruled an algorithm out: the table's key, or its transport.
const char* ruledOutBy(const Assessment& assessment) {
  if (assessment.outside) return tuningKeyOf(assessment.outside).name;
  if (assessment.yielded) return tuningKeyOf(assessment.yielded).name;
  return "shared memory only";
}

// "direct_pull_out_of_place 256K..8M": the table's range that decided, by its key.
std::string rangeText(const Tuning& tuning, const SizeRange& range) {
  for (const TuningKey& key : tuningKeys())
    if (const auto* field = std::get_if<SizeRange Tuning::*>(&key.field);
        field && &(tuning.*(*field)) == &range)
      return fmt::format("{} {}", key.name, formatTuningValue(tuning, key));
  return fmt::format("{}..{}", formatBytes(range.least), formatBytes(range.most));
}

// "ring 12.1 us < tree 20 us; ruled out: oneshot (oneshot_max_bytes)", the skipped one left out;
// an algorithm measured fastest at the size comes first: "doubling: measured fastest within
// tcp_doubling_range 0..64K; then oneshot 22.4 us < ...".
std::string costs(const Tuning& tuning, const LinkModel& link, const AllReduceCase& call,
                  std::string_view skip) {
  std::vector<std::pair<double, const char*>> priced;
  std::string out, ruledOut, measured;
  const RankShape shape = RankShape::flat(call.ranks);
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != Collective::kAllReduce || algorithm.name == skip) continue;
    const Assessment assessment =
        assess(algorithm, tuning, call.bytes, shape, call.sharedMemory, link);
    if (assessment.measured && measured.empty())
      measured = fmt::format("{}: measured fastest within {}; then ", algorithm.name,
                             rangeText(tuning, tuning.*algorithm.runsWithinOf(call.sharedMemory)));
    else if (assessment.applies)
      priced.emplace_back(assessment.costUs, algorithm.name);
    else
      ruledOut += fmt::format("{}{} ({})", ruledOut.empty() ? "" : ", ", algorithm.name,
                              ruledOutBy(assessment));
  }
  std::stable_sort(priced.begin(), priced.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [cost, name] : priced)
    out += fmt::format("{}{} {} us", out.empty() ? "" : " < ", name,
                       cost < 100 ? fmt::format("{:.3g}", cost) : fmt::format("{:.0f}", cost));
  if (!ruledOut.empty()) out += "; ruled out: " + ruledOut;
  return measured + out;
}

}  // namespace

AllReduceChoice explainAllReduce(const Tuning& tuning, const LinkModel& link,
                                 const AllReduceCase& call) {
  const RankShape shape = RankShape::flat(call.ranks);
  const Algorithm& planned =
      cheapestAlgorithm(Collective::kAllReduce, tuning, call.bytes, shape, call.sharedMemory, link);
  std::string why = costs(tuning, link, call, {});
  if (std::string_view(planned.name) != "direct" || call.registered) return {&planned, why};
  const Algorithm& instead = cheapestAlgorithm(Collective::kAllReduce, tuning, call.bytes, shape,
                                               call.sharedMemory, link, "direct");
  if (call.directBuffers == DirectBuffers::kRegistered)
    return {&instead, fmt::format("{}; TUTTI_DIRECT_BUFFERS=registered: direct does not reach "
                                  "ordinary buffers: the cheapest of the rest, {}",
                                  why, instead.name)};
  const PullVerdict pull = directPullPays(tuning, call.bytes, call.ranks, call.inPlace);
  const char* place = call.inPlace ? "in place" : "out of place";
  if (pull.pays)
    return {&planned, fmt::format("{}; direct pulls {}: {} within {}", why, place,
                                  formatBytes(call.bytes), rangeText(tuning, *pull.range))};
  const std::string refusal = pull.range ? fmt::format("{} outside {}", formatBytes(call.bytes),
                                                       rangeText(tuning, *pull.range))
                                         : std::string("in place only with 2 ranks");
  return {&instead, fmt::format("{}; direct does not pull {} ({}): the cheapest of the rest, {}",
                                why, place, refusal, instead.name)};
}

}  // namespace tutti::runtime
