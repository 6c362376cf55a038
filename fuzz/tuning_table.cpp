// Tuning tables (runtime/tuning/tuning_file.hpp) on hostile text: a file a user points
// TUTTI_TUNING_FILE at, and rank 0's table as the others read it from the store. A file is
// refused with kInvalidArgument, a store record with kRemote; what is accepted holds every key
// within its range in every section, and writes back to text that reads as the same table.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.hpp"
#include "runtime/tuning/tuning_file.hpp"

namespace {

using namespace tutti;
using runtime::Tuning;
using runtime::TuningKey;
using runtime::TuningTable;

bool withinRange(const Tuning& tuning, const TuningKey& key) {
  const auto within = [&](double value) { return value >= key.min && value <= key.max; };
  if (const auto* size = std::get_if<size_t Tuning::*>(&key.field))
    return within(double(tuning.*(*size)));
  if (const auto* real = std::get_if<double Tuning::*>(&key.field)) return within(tuning.*(*real));
  const runtime::SizeRange& range = tuning.*std::get<runtime::SizeRange Tuning::*>(key.field);
  return range.least <= range.most && within(double(range.least)) && within(double(range.most));
}

void checkAccepted(const TuningTable& table) {
  for (const TuningKey& key : runtime::tuningKeys()) {
    if (!withinRange(table.any, key)) fuzz::bug(std::string(key.name) + " out of its range");
    for (const auto& [ranks, section] : table.byRanks)
      if (!withinRange(section, key))
        fuzz::bug(std::string(key.name) + " out of its range in [ranks " + std::to_string(ranks) +
                  "]");
  }
  const std::string written = runtime::formatTuningFile(table, "written back\nover two lines");
  TuningTable again;
  if (!fuzz::accepts(ErrorCode::kInvalidArgument,
                     [&] { again = runtime::parseTuning(written, "written back"); }))
    fuzz::bug("the table written back is refused");
  if (!(again == table)) fuzz::bug("the table written back reads as another table");
  runtime::TuningSource sent;
  if (!fuzz::accepts(ErrorCode::kRemote, [&] {
        sent = runtime::decodeTuning(runtime::encodeTuning({table, "origin"}), "sent");
      }))
    fuzz::bug("the table sent through the store is refused");
  if (!(sent.table == table) || sent.origin != "rank 0's: origin")
    fuzz::bug("the table sent through the store arrives changed");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::discardLogs();
  return 0;
}

// The first byte picks the surface: even a file's text, odd a store record.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  TuningTable table;
  const bool file = data[0] % 2 == 0;
  const bool accepted = file ? fuzz::accepts(ErrorCode::kInvalidArgument,
                                             [&] { table = runtime::parseTuning(text, "file"); })
                             : fuzz::accepts(ErrorCode::kRemote, [&] {
                                 table = runtime::decodeTuning(text, "record").table;
                               });
  if (accepted) checkAccepted(table);
  return 0;
}
