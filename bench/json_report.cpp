#include "bench/json_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "base/regular_file.hpp"
#include "bench/types.hpp"

namespace tutti::bench {
namespace {

using nlohmann::json;

constexpr const char* kSchema = "tutti-bench/1";

json placementJson(const Measurement& m) {
  return {{"time_us", m.seconds * 1e6},
          {"time_max_us", m.maxSeconds * 1e6},
          {"algbw_gbps", m.bandwidth.algbw},
          {"busbw_gbps", m.bandwidth.busbw},
          {"wrong", m.wrong ? json(*m.wrong) : json(nullptr)}};
}

Measurement placementFromJson(const json& j) {
  Measurement m;
  m.seconds = j.at("time_us").get<double>() / 1e6;
  m.maxSeconds = j.at("time_max_us").get<double>() / 1e6;
  m.bandwidth = {j.at("algbw_gbps").get<double>(), j.at("busbw_gbps").get<double>()};
  if (!j.at("wrong").is_null()) m.wrong = j.at("wrong").get<int64_t>();
  return m;
}

json configurationJson(const BenchOptions& o, int nranks) {
  json types = json::array(), ops = json::array();
  for (auto t : o.dtypes) types.push_back(typeName(t));
  for (auto op : o.ops) ops.push_back(opName(op));
  const char* aggregates[] = {"rank0", "avg", "min", "max"};
  return {{"collective", o.collective},
          {"command_line", o.commandLine},
          {"nranks", nranks},
          {"min_bytes", o.minBytes},
          {"max_bytes", o.maxBytes},
          {"step_factor", o.stepBytes ? json(nullptr) : json(o.stepFactor)},
          {"step_bytes", o.stepBytes ? json(o.stepBytes) : json(nullptr)},
          {"iters", o.iters},
          {"warmup_iters", o.warmupIters},
          {"agg_iters", o.aggIters},
          {"check", o.check},
          {"datatypes", types},
          {"ops", ops},
          {"root", o.allRoots ? json("all") : json(o.root)},
          {"average", aggregates[static_cast<int>(o.aggregate)]},
          {"cycles", o.cycles},
          {"rounds", o.rounds},
          {"misaligned", o.misaligned},
          {"algorithms", o.algorithms.empty() ? json::array({"auto"}) : json(o.algorithms)},
          {"transport", o.transport.empty() ? "default" : o.transport},
          {"buffers", o.buffers}};
}

}  // namespace

nlohmann::json toJson(const BenchOptions& options, const Results& r) {
  json hosts = json::array(), ranks = json::array();
  for (const auto& rank : r.ranks) {
    if (std::find(hosts.begin(), hosts.end(), rank.host) == hosts.end()) hosts.push_back(rank.host);
    ranks.push_back({{"rank", rank.rank},
                     {"local_rank", rank.localRank},
                     {"pid", rank.pid},
                     {"host", rank.host}});
  }
  json rows = json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"collective", row.collective},
                    {"algorithm", row.algorithm},
                    {"bytes", row.bytes},
                    {"count", row.count},
                    {"type", row.type},
                    {"redop", row.op},
                    {"root", row.root},
                    {"out_of_place", placementJson(row.outOfPlace)},
                    {"in_place", placementJson(row.inPlace)}});
  }
  return {{"schema", kSchema},
          {"configuration", configurationJson(options, r.nranks)},
          {"machine",
           {{"hosts", hosts}, {"cores", r.cores}, {"transports", r.transports}, {"ranks", ranks}}},
          {"rows", rows},
          {"summary",
           {{"avg_busbw_gbps", r.avgBusBw},
            {"out_of_bounds", r.failedChecks},
            {"ok", r.failedChecks == 0}}}};
}

Results resultsFromJson(const nlohmann::json& j) {
  try {
    if (j.at("schema") != kSchema) {
      throw std::runtime_error(
          fmt::format("schema {} (expected {})", j.at("schema").dump(), kSchema));
    }
    Results r;
    r.nranks = j.at("configuration").at("nranks").get<int>();
    const json& machine = j.at("machine");
    r.cores = machine.at("cores").get<int>();
    r.transports = machine.at("transports").get<std::vector<std::string>>();
    for (const json& rank : machine.at("ranks")) {
      r.ranks.push_back({rank.at("rank").get<int>(), rank.at("local_rank").get<int>(),
                         rank.at("pid").get<int>(), rank.at("host").get<std::string>()});
    }
    for (const json& row : j.at("rows")) {
      r.rows.push_back({row.at("collective").get<std::string>(),
                        row.at("algorithm").get<std::string>(), row.at("bytes").get<size_t>(),
                        row.at("count").get<size_t>(), row.at("type").get<std::string>(),
                        row.at("redop").get<std::string>(), row.at("root").get<int>(),
                        placementFromJson(row.at("out_of_place")),
                        placementFromJson(row.at("in_place"))});
    }
    r.avgBusBw = j.at("summary").at("avg_busbw_gbps").get<double>();
    r.failedChecks = j.at("summary").at("out_of_bounds").get<int64_t>();
    return r;
  } catch (const json::exception& e) {
    throw std::runtime_error(e.what());
  }
}

void writeJson(const std::string& path, const BenchOptions& options, const Results& results) {
  std::ofstream out(path);
  out << toJson(options, results).dump(2) << "\n";
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

Results readJson(const std::string& path) {
  const std::string text = tutti::readRegularFile(path, path);
  try {
    return resultsFromJson(json::parse(text));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
}

void writeCsv(const std::string& path, const Results& r) {
  std::ofstream out(path);
  out << "collective,algorithm,bytes,count,type,redop,root,placement,time_us,time_max_us,"
         "algbw_gbps,busbw_gbps,wrong\n";
  for (const auto& row : r.rows) {
    for (const auto& [name, m] :
         {std::pair{"out-of-place", &row.outOfPlace}, std::pair{"in-place", &row.inPlace}}) {
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", row.collective, row.algorithm,
                         row.bytes, row.count, row.type, row.op, row.root, name, m->seconds * 1e6,
                         m->maxSeconds * 1e6, m->bandwidth.algbw, m->bandwidth.busbw,
                         m->wrong ? std::to_string(*m->wrong) : "");
    }
  }
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

}  // namespace tutti::bench
