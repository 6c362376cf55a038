// The golden layout: tutti-bench's rows and footer, as report.hpp formats them, read by a parser
// written against nccl-tests' format (bench_table.hpp), which also rejects malformed rows.
#include "bench_table.hpp"

#include <catch2/catch.hpp>

#include "bench/report.hpp"

using namespace tutti::bench;
using tutti::test::parseRow;
using tutti::test::parseTable;

TEST_CASE("nccl-tests' own row parses", "[bench][report]") {
  // A line of all_reduce_perf output, verbatim.
  auto row = parseRow(
      "     1048576        262144     float     sum      -1    56.78   18.47"
      "   34.63      0    55.21   18.99   35.61      0");
  REQUIRE(row);
  CHECK(row->bytes == 1048576);
  CHECK(row->count == 262144);
  CHECK(row->type == "float");
  CHECK(row->op == "sum");
  CHECK(row->root == -1);
  CHECK(row->outOfPlace.busbw == Approx(34.63));
  CHECK(row->inPlace.wrong == 0);
}

TEST_CASE("tutti-bench's report reads as nccl-tests' format", "[bench][report]") {
  std::string report = "# a comment\n" + formatTableHeader();
  Measurement m{12.5e-6, {1.25, 2.5}, 0};
  Measurement unchecked{1e-3, {0.5, 0.75}, std::nullopt};
  report +=
      formatRowStart(8, 2, "float", "sum", -1) + formatMeasurement(m) + formatMeasurement(m) + "\n";
  report += formatRowStart(4096, 1024, "bfloat16", "none", 3) + formatMeasurement(unchecked) +
            formatMeasurement(unchecked) + "\n";
  report += formatFooter(0, 1.5);
  auto table = parseTable(report);
  REQUIRE(table);
  REQUIRE(table->rows.size() == 2);
  CHECK(table->rows[0].outOfPlace.timeUs == Approx(12.5));
  CHECK(table->rows[0].inPlace.algbw == Approx(1.25));
  CHECK(table->rows[1].type == "bfloat16");
  CHECK(table->rows[1].op == "none");
  CHECK(table->rows[1].root == 3);
  CHECK_FALSE(table->rows[1].outOfPlace.wrong);
  CHECK(table->outOfBounds == 0);
  CHECK(table->ok);
  CHECK(table->avgBusBw == Approx(1.5));
}

TEST_CASE("the parser rejects malformed rows and a missing footer", "[bench][report]") {
  const std::string good =
      "           8             2     float     sum      -1     4.21    0.00"
      "    0.00      0     4.03    0.00    0.00      0";
  REQUIRE(parseRow(good));
  CHECK_FALSE(parseRow(good + "    7"));                           // 14 fields
  CHECK_FALSE(parseRow(good.substr(0, good.rfind("0.00"))));       // 12 fields
  CHECK_FALSE(parseRow("8 2 float sum -1 fast 0 0 0 4 0 0 0"));    // a time that is not a number
  CHECK_FALSE(parseRow("8 2 float sum -1 4.2 0 0 many 4 0 0 0"));  // #wrong neither count nor N/A
  CHECK_FALSE(parseRow("8.5 2 float sum -1 4.2 0 0 0 4 0 0 0"));   // a size that is not integral
  CHECK(parseTable(good + "\n" + formatFooter(0, 1)));
  CHECK_FALSE(parseTable(good + "\n# Out of bounds values : 0 OK\n"));  // no average line
  CHECK_FALSE(parseTable("garbage\n" + formatFooter(0, 1)));
}
