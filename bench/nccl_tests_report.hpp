// The report of the *_perf programs, laid out as current nccl-tests (2.19) prints it: the
// version and "Collective test starting/concluded" lines, its column widths (numbers narrowed to
// fit, "#wrong" as %6g, "N/A"), -I's four extra columns per placement, -C's and -S's variants,
// and the footer with NCCL_TESTS_MIN_BW's verdict. tutti's own remarks never go here (stderr).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/report.hpp"

namespace tutti::bench {

// The nccl-tests release whose output and JSON the *_perf programs reproduce.
constexpr const char* kNcclTestsVersion = "2.19.6";
// tutti's version as NCCL encodes its own (major * 10000 + minor * 100 + patch): the
// "nccl-headers=" and "nccl-library=" numbers of the version line and JSON's "nccl_version".
int tuttiVersionCode();

// nccl-tests' fixed-width number: two decimals, else one, else none, else exponent form.
std::string fitNumber(double value, int width);

// nccl-tests' lines that echo an argument back ("invalid type X, ...", "# Writing JSON output to
// FILE"): on stdout as it prints them, unless the argument would put a word scrapers search for
// (FAILED, bandwidth, "Out of bounds", any case) on stdout; such a line goes to stderr.
bool safeForScrapers(const std::string& line);
void printEcho(const std::string& lines);

// From "# nccl-tests version" to the rank lines ("#  Rank  0 Group  0 Pid ... [cpu] tutti shm").
std::string formatNcclPreamble(const BenchOptions& options, const std::vector<RankInfo>& ranks);
// "#" and the three header lines (with -I's, -C's and -S's columns when asked for).
std::string formatNcclTableHeader(const BenchOptions& options);
// One placement's columns, with -I's "i_min i_max i_p99 i_cv%" when it has statistics.
std::string formatNcclMeasurement(const Measurement& m);
// -S: the time of day after a row, in nccl-tests' column.
std::string formatNcclTimestamp();

// NCCL_TESTS_MIN_BW: the average bus bandwidth (GB/s) a run must reach, less nccl-tests' 10%
// slack; nullopt when unset.
std::optional<double> ncclTestsMinBusBw();
bool belowMinBusBw(double avgBusBw, std::optional<double> minBusBw);

// nccl-tests' exit statuses (its testResult_t): a failed NCCL (here tutti) call, a -T timeout,
// wrong results or too little bandwidth.
constexpr int kNcclTestsError = 3;
constexpr int kNcclTestsTimeout = 4;
constexpr int kNcclTestsFailed = 7;
// A finished run's: 0, or kNcclTestsFailed for wrong values or an average busbw below the minimum.
int ncclTestsStatus(int64_t failedChecks, double avgBusBw, std::optional<double> minBusBw);

// From "# Out of bounds values" to "# Collective test concluded: PROGRAM".
std::string formatNcclFooter(int64_t failedChecks, double avgBusBw, std::optional<double> minBusBw,
                             const std::string& program);
// The last lines: "#" and an empty line (nccl-tests' "no error" line).
std::string formatNcclEnd();

}  // namespace tutti::bench
