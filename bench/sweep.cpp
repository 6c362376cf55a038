// Measurement, as nccl-tests does it, for every collective of the table: for each type, op and
// root, warm up at the largest and smallest size; then for each size and each placement
// (out-of-place, then in-place): one untimed call, a barrier, `iters` timed iterations of
// `aggIters` calls (one group when more than one); the time of one call is each rank's loop time
// / (iters * aggIters), combined across ranks as -a says. Then, with -c, fresh inputs, one call,
// and the wrong elements counted on every rank against the table's expected values and summed.
// With -I every timed iteration is timed on its own as well; with -T a watchdog aborts the
// communicator when one row takes longer than allowed.
#include "bench/sweep.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/check_data.hpp"
#include "bench/iteration_stats.hpp"
#include "bench/nccl_tests_report.hpp"
#include "bench/progress.hpp"
#include "bench/report.hpp"
#include "bench/types.hpp"
#include "bench/watchdog.hpp"
#include "runtime/collectives/autotune.hpp"

namespace tutti::bench {
namespace {

// One table of rows: a type, an op (sum when the collective takes none) and a root (-1).
struct Case {
  tuttiDataType_t dtype;
  tuttiRedOp_t op;
  int root;
};

// -u N: buffers start N elements past their (page-aligned) allocation: room for N of the largest
// type.
size_t misalignSlack(const BenchOptions& o) {
  return 8 * static_cast<size_t>(o.misaligned ? o.unalign : 0);
}

class Benchmark {
 public:
  Benchmark(const BenchOptions& options, const Comm& comm, const CollectiveSpec& spec,
            const Results* baseline)
      : o_(options),
        comm_(comm),
        spec_(spec),
        send_(options.maxBytes + misalignSlack(options), options.buffers, comm.device()),
        recv_(options.maxBytes + misalignSlack(options), options.buffers, comm.device()),
        baseline_(baseline),
        watchdog_(comm.get(), options.timeoutSeconds),
        progress_(
            comm.rank() == 0 && !options.quiet, spec.name,
            options.cycles * cases().size() * (spec.moves ? sweepSizes(options, 1).size() : 1)) {}

  int run() {
    print(o_.nccl ? formatNcclTableHeader(o_)
                  : formatTableHeader(o_.algorithms, baseline_ != nullptr));
    for (int cycle = 0; o_.cycles == 0 || cycle < o_.cycles; ++cycle) {
      for (const Case& c : cases()) runCase(c);
    }
    results_.avgBusBw = busBwCount_ ? busBwSum_ / busBwCount_ : 0;
    results_.failedChecks = failedChecks_;
    if (o_.nccl) {
      print(
          formatNcclFooter(failedChecks_, results_.avgBusBw, ncclTestsMinBusBw(), o_.nccl.program));
    } else {
      print(formatFooter(failedChecks_, results_.avgBusBw));
    }
    if (o_.memoryReport) reportMemory();
    if (o_.nccl) print(formatNcclEnd());
    return failedChecks_ ? 1 : 0;
  }

  Results& results() { return results_; }
  int rowsBelowRatio() const { return rowsBelowRatio_; }
  int rowsCompared() const { return rowsCompared_; }

 private:
  struct Placement {
    Measurement measurement;
    std::optional<IterationStats> stats;  // -I
    std::vector<double> roundSeconds;     // --rounds: every round's time, in order
  };

  std::vector<Case> cases() const {
    std::vector<Case> out;
    for (tuttiDataType_t dtype : o_.dtypes) {
      for (tuttiRedOp_t op : o_.ops) {
        if (spec_.rooted && o_.allRoots) {
          for (int root = 0; root < comm_.size(); ++root) out.push_back({dtype, op, root});
        } else {
          out.push_back({dtype, op, spec_.rooted ? o_.root : -1});
        }
        if (!listsOps()) break;
      }
      if (!spec_.moves) break;
    }
    return out;
  }

  // Whether the op is a column of its own: for the reducing collectives; and under the name
  // sendrecv_perf, which loops over -o and prints the op as nccl-tests' does (its data moves
  // unreduced all the same).
  bool listsOps() const {
    return spec_.reduces || (o_.nccl && std::string(spec_.name) == "sendrecv");
  }

  // On rank 0 only, and never over the progress line.
  void print(const std::string& text) {
    if (comm_.rank() != 0) return;
    progress_.clear();
    std::fputs(text.c_str(), stdout);
  }

  void runCase(const Case& c) {
    const size_t unit = typeSize(c.dtype);
    const std::vector<size_t> sizes = spec_.moves ? sweepSizes(o_, unit) : std::vector<size_t>{0};
    const CheckData data(c.dtype, spec_.reduces ? c.op : tuttiMax, comm_.size());
    if (o_.verbose) {
      print(fmt::format("# {} type {} op {} root {}: {} warm-up iterations at {} and {} B\n",
                        spec_.name, typeName(c.dtype), listsOps() ? opName(c.op) : "none", c.root,
                        o_.warmupIters, sizes.back(), sizes.front()));
    }
    for (const std::string* algorithm : algorithms()) {
      if (algorithm) useAlgorithm(*algorithm);
      for (size_t bytes : warmupSizes(o_, unit)) {
        warmUp(c, layout(c, bytes));
      }
    }
    for (size_t bytes : sizes) {
      if (comm_.rank() == 0) progress_.startRow(bytes);
      const Layout l = layout(c, bytes);
      const size_t rowBytes = std::max(l.sendCount, l.recvCount) * unit;
      std::string line = formatRowStart(rowBytes, l.count, typeName(c.dtype),
                                        listsOps() ? opName(c.op) : "none", c.root);
      std::string stats;
      watchdog_.arm();
      const std::vector<std::string>& names = o_.algorithms;
      const std::vector<std::array<Placement, 2>> measured = measureRounds(c, data, l, rowBytes);
      watchdog_.disarm();
      const size_t firstResult = results_.rows.size();
      for (size_t a = 0; a < measured.size(); ++a) {
        ResultRow& result = results_.rows.emplace_back();
        result = {spec_.name,
                  names.empty() ? "auto" : names[a],
                  rowBytes,
                  l.count,
                  typeName(c.dtype),
                  listsOps() ? opName(c.op) : "none",
                  c.root,
                  {},
                  {}};
        for (bool inPlace : {false, true}) {
          const Placement& p = measured[a][inPlace];
          (inPlace ? result.inPlace : result.outOfPlace) = p.measurement;
          busBwSum_ += p.measurement.bandwidth.busbw;
          ++busBwCount_;
          failedChecks_ += p.measurement.wrong.value_or(0) != 0;
          if (o_.nccl) {
            line += formatNcclMeasurement(p.measurement);
          } else {
            line += formatMeasurement(p.measurement);
          }
          const std::string label = std::string(inPlace ? "in-place" : "out-of-place") +
                                    (names.size() > 1 ? " " + names[a] : "");
          if (p.stats) stats += formatIterationStats(rowBytes, label.c_str(), *p.stats);
          if (o_.verbose && o_.rounds > 1) {
            stats += formatRounds(rowBytes, label, p.roundSeconds, p.measurement.seconds);
          }
        }
      }
      if (baseline_) line += ratioColumn(results_.rows[firstResult]);
      if (o_.nccl.timestamps) line += formatNcclTimestamp();
      print(line + "\n" + stats);
    }
  }

  // --compare: this row's out-of-place busbw over the baseline's ("-" when it has no such row).
  std::string ratioColumn(const ResultRow& row) {
    const ResultRow* base = findMatch(baseline_->rows, row);
    if (!base || base->outOfPlace.bandwidth.busbw <= 0) return fmt::format("  {:>6}", "-");
    double ratio = row.outOfPlace.bandwidth.busbw / base->outOfPlace.bandwidth.busbw;
    ++rowsCompared_;
    rowsBelowRatio_ += ratio < o_.minRatio;
    return fmt::format("  {:6.2f}", ratio);
  }

  // --algo: the algorithms of the column groups; one null entry: the runtime's choice, untouched.
  std::vector<const std::string*> algorithms() const {
    if (o_.algorithms.empty()) return {nullptr};
    std::vector<const std::string*> out;
    for (const auto& a : o_.algorithms) out.push_back(&a);
    return out;
  }

  void useAlgorithm(const std::string& algorithm) {
    check(tutti_comm_set_algorithm(comm_.get(), algorithm.c_str()), "tutti_comm_set_algorithm");
  }

  // Each column group's placements (out of place, in place) at one size: --rounds of them, the
  // groups in turn, so that the machine's drift falls on every group alike, every other round in
  // reverse, so that a drift within a round falls on the first group and the last alike. Each
  // group warms up again (-w calls) when it takes over from another: whatever group followed
  // the direct algorithm ran its next calls slower (2 ranks, 128 B, 2-core AMD EPYC: 0.67-0.76
  // us over 10 calls against 0.60-0.64 after any other). Each placement is its median round,
  // with the most wrong elements any round counted, and every round's time.
  std::vector<std::array<Placement, 2>> measureRounds(const Case& c, const CheckData& data,
                                                      const Layout& l, size_t rowBytes) {
    const std::vector<const std::string*> groups = algorithms();
    std::vector<std::array<std::vector<Placement>, 2>> rounds(groups.size());
    for (size_t round = 0; round < static_cast<size_t>(o_.rounds); ++round) {
      for (size_t turn = 0; turn < groups.size(); ++turn) {
        const size_t a = round % 2 ? groups.size() - 1 - turn : turn;
        if (groups[a]) useAlgorithm(*groups[a]);
        if (groups.size() > 1) warmUp(c, l);
        if (round == 0 && runsAutotune(groups[a])) runAutotuneTrials(c, l, rowBytes);
        for (bool inPlace : {false, true}) {
          rounds[a][inPlace].push_back(measureTimed(c, data, l, rowBytes, inPlace));
        }
      }
    }
    std::vector<std::array<Placement, 2>> out(groups.size());
    for (size_t a = 0; a < groups.size(); ++a) {
      for (bool inPlace : {false, true}) {
        std::vector<Placement>& each = rounds[a][inPlace];
        std::vector<double> seconds;
        std::optional<int64_t> wrong;
        for (const Placement& p : each) {
          seconds.push_back(p.measurement.seconds);
          if (p.measurement.wrong) wrong = std::max(wrong.value_or(0), *p.measurement.wrong);
        }
        out[a][inPlace] = std::move(each[medianRound(seconds)]);
        out[a][inPlace].measurement.wrong = wrong;
        out[a][inPlace].roundSeconds = std::move(seconds);
      }
    }
    return out;
  }

  // measure(), with a watchdog's abort turned into a message naming the limit.
  Placement measureTimed(const Case& c, const CheckData& data, const Layout& l, size_t rowBytes,
                         bool inPlace) {
    return watched(rowBytes, [&] { return measure(c, data, l, rowBytes, inPlace); });
  }

  // work() on a row of rowBytes, with a watchdog's abort turned into a message naming the limit.
  template <typename Work>
  auto watched(size_t rowBytes, Work&& work) -> decltype(work()) {
    try {
      return work();
    } catch (const std::runtime_error& e) {
      if (!watchdog_.fired()) throw;
      throw TimeoutError(fmt::format("{} of {} B took longer than -T {} s (aborted: {})",
                                     spec_.name, rowBytes, o_.timeoutSeconds, e.what()));
    }
  }

  void reportMemory() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double peak = comm_.combine(static_cast<double>(usage.ru_maxrss), Aggregate::kMax);
    const size_t bytes = o_.maxBytes + misalignSlack(o_);
    print(formatMemory(bytes, bytes, static_cast<long>(peak)));
  }

  Layout layout(const Case& c, size_t bytes) const {
    size_t elements = bytes / typeSize(c.dtype);
    if (o_.nccl) elements = ncclTestsElements(spec_, elements, typeSize(c.dtype), comm_.size());
    return spec_.layout(elements, comm_.rank(), comm_.size());
  }

  // Where a case's buffers start: -u's offset.
  size_t start(const Case& c) const { return o_.misaligned ? o_.unalign * typeSize(c.dtype) : 0; }
  // The input's buffer and offset: the send buffer, or its place in the receive buffer.
  const Buffer& inputBuffer(bool inPlace) const { return inPlace ? recv_ : send_; }
  size_t inputStart(const Case& c, const Layout& l, bool inPlace) const {
    return start(c) + (inPlace ? l.inPlaceSend * typeSize(c.dtype) : 0);
  }

  void call(const Case& c, const Layout& l, bool inPlace) {
    void* recv = recv_.data() + start(c);
    const void* send = inputBuffer(inPlace).data() + inputStart(c, l, inPlace);
    CallArgs args{send,   recv,         l.count,      c.dtype,    c.op,
                  c.root, comm_.rank(), comm_.size(), comm_.get()};
    check(spec_.call(args), spec_.name);
  }

  // -w untimed calls, out of place.
  void warmUp(const Case& c, const Layout& l) {
    for (int i = 0; i < o_.warmupIters; ++i) call(c, l, false);
  }

  // Whether the group's all-reduces are auto's, which TUTTI_AUTOTUNE may time: the first calls of
  // each size are its trial of every algorithm (runtime/collectives/autotune.hpp).
  bool runsAutotune(const std::string* algorithm) const {
    return std::string_view(spec_.name) == "allreduce" && (!algorithm || *algorithm == "auto");
  }
  // The longest trial, untimed: the timed calls measure what auto settles on.
  void runAutotuneTrials(const Case& c, const Layout& l, size_t rowBytes) {
    watched(rowBytes, [&] {
      for (int i = 0; i < runtime::SizeTrial::longestCalls(); ++i) call(c, l, false);
    });
  }

  // One timed iteration: aggIters calls, grouped when more than one.
  void iteration(const Case& c, const Layout& l, bool inPlace) {
    if (o_.aggIters == 1) return call(c, l, inPlace);
    check(tutti_group_start(), "tutti_group_start");
    for (int i = 0; i < o_.aggIters; ++i) call(c, l, inPlace);
    check(tutti_group_end(), "tutti_group_end");
  }

  Placement measure(const Case& c, const CheckData& data, const Layout& l, size_t rowBytes,
                    bool inPlace) {
    using Clock = std::chrono::steady_clock;
    if (o_.check) prepare(c, data, l, inPlace);
    iteration(c, l, inPlace);
    check(tutti_barrier(comm_.get(), nullptr), "tutti_barrier");
    std::vector<double> samples;
    auto start = Clock::now();
    if (o_.iterationStats) {
      samples.reserve(static_cast<size_t>(o_.iters));
      for (int i = 0; i < o_.iters; ++i) {
        auto begin = Clock::now();
        iteration(c, l, inPlace);
        samples.push_back(std::chrono::duration<double>(Clock::now() - begin).count() /
                          o_.aggIters);
      }
    } else {
      for (int i = 0; i < o_.iters; ++i) iteration(c, l, inPlace);
    }
    std::chrono::duration<double> elapsed = Clock::now() - start;
    Placement p;
    Measurement& m = p.measurement;
    m.seconds = comm_.combine(elapsed.count() / o_.iters / o_.aggIters, o_.aggregate);
    m.maxSeconds = comm_.combine(elapsed.count() / o_.iters / o_.aggIters, Aggregate::kMax);
    if (o_.iterationStats && o_.nccl) {
      // nccl-tests' statistics: of each iteration's slowest rank, less the -K first iterations.
      for (double& t : samples) t = comm_.combine(t, Aggregate::kMax);
      m.iterationStats =
          iterationStats(std::vector<double>(samples.begin() + o_.nccl.perIterSkip, samples.end()));
      m.iterationSeconds = std::move(samples);
    } else if (o_.iterationStats) {
      p.stats = combine(iterationStats(std::move(samples)));
    }
    m.bandwidth = bandwidth(rowBytes, m.seconds, spec_.busFactor(comm_.size()));
    if (o_.check && spec_.moves) {
      int64_t wrong = 0;
      for (int i = 0; i < o_.check && wrong == 0; ++i) {
        prepare(c, data, l, inPlace);
        call(c, l, inPlace);
        wrong = comm_.sum(countWrong(c, data, l, inPlace));
      }
      m.wrong = wrong;
    }
    return p;
  }

  // Each rank's statistic combined as -a says.
  IterationStats combine(IterationStats s) const {
    for (double* v : {&s.min, &s.max, &s.p50, &s.p99, &s.cv}) *v = comm_.combine(*v, o_.aggregate);
    return s;
  }

  // Inputs in the send buffer (out-of-place) or in place in the receive buffer; poison wherever
  // the result goes.
  void prepare(const Case& c, const CheckData& data, const Layout& l, bool inPlace) {
    const size_t unit = typeSize(c.dtype);
    CheckData::fillPoison(recv_.host(start(c)), l.recvCount * unit);
    recv_.toDevice(start(c), l.recvCount * unit);
    if (!spec_.hasInput(comm_.rank(), c.root)) return;
    const Buffer& input = inputBuffer(inPlace);
    data.fillInput(input.host(inputStart(c, l, inPlace)), l.sendCount, comm_.rank());
    input.toDevice(inputStart(c, l, inPlace), l.sendCount * unit);
  }

  int64_t countWrong(const Case& c, const CheckData& data, const Layout& l, bool inPlace) {
    const size_t unit = typeSize(c.dtype);
    const auto expected = spec_.expected(l, comm_.rank(), comm_.size(), c.root, inPlace);
    for (const Expected& e : expected) recv_.fromDevice(start(c) + e.offset * unit, e.count * unit);
    unsigned char* recv = recv_.host(start(c));
    o_.fault.apply(comm_.rank(), recv, l.recvCount, unit);
    int64_t wrong = 0;
    for (const Expected& e : expected) {
      wrong += data.countWrong(recv + e.offset * unit, e.count, e.firstIndex, e.source);
    }
    return wrong;
  }

  const BenchOptions& o_;
  const Comm& comm_;
  const CollectiveSpec& spec_;
  Buffer send_, recv_;
  const Results* baseline_;
  Watchdog watchdog_;
  Progress progress_;
  Results results_;
  int rowsBelowRatio_ = 0;
  int rowsCompared_ = 0;
  int64_t failedChecks_ = 0;
  double busBwSum_ = 0;
  int busBwCount_ = 0;
};

}  // namespace

SweepOutcome runSweep(const BenchOptions& options, const Comm& comm, const CollectiveSpec& spec,
                      const Results* baseline) {
  Benchmark bench(options, comm, spec, baseline);
  SweepOutcome outcome;
  outcome.status = bench.run();
  outcome.rowsBelowRatio = bench.rowsBelowRatio();
  outcome.rowsCompared = bench.rowsCompared();
  outcome.results = std::move(bench.results());
  return outcome;
}

}  // namespace tutti::bench
