// tutti-bench allreduce with real ranks: the report's rows are there, every check passes.
#include <catch2/catch.hpp>

#include "bench_table.hpp"
#include "subprocess.hpp"

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("tutti-bench allreduce --ranks 2 reports every size, all correct", "[bench]") {
  auto r = tutti::test::run({tutti::test::requiredEnv("TUTTIBENCH"), "allreduce", "--ranks", "2",
                             "-b", "8", "-e", "64K", "-n", "2", "-w", "1"},
                            240);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto parsed = tutti::test::parseTable(r.out);
  REQUIRE(parsed);
  const auto& table = parsed->rows;
  REQUIRE(table.size() == 14);  // 8 B .. 64 KiB, doubling
  long bytes = 8;
  for (const auto& row : table) {
    CHECK(row.bytes == bytes);
    CHECK(row.count == bytes / 4);
    CHECK(row.type == "float");
    CHECK(row.op == "sum");
    CHECK(row.outOfPlace.wrong == 0);
    CHECK(row.inPlace.wrong == 0);
    bytes *= 2;
  }
  CHECK(contains(r.out, "#  Rank  0 Group  0 Pid"));
  CHECK(contains(r.out, "#  Rank  1 Group  0 Pid"));
  CHECK(contains(r.out, "# Out of bounds values : 0 OK\n"));
  CHECK(contains(r.out, "# Avg bus bandwidth    : "));
}

TEST_CASE("tutti-bench under tuttirun: rounded sizes, half avg, one report", "[bench]") {
  auto r = tutti::test::run(
      {tutti::test::requiredEnv("TUTTIRUN"), "-n", "3", tutti::test::requiredEnv("TUTTIBENCH"),
       "allreduce", "-b", "9", "-e", "99", "-d", "half", "-o", "avg", "-n", "1", "-w", "0"},
      240);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto parsed = tutti::test::parseTable(r.out);
  REQUIRE(parsed);
  const auto& table = parsed->rows;
  REQUIRE(table.size() == 4);  // 9 18 36 72, rounded down to whole halves
  CHECK(table[0].bytes == 8);
  CHECK(table[0].count == 4);
  CHECK(table[1].bytes == 18);
  CHECK(table[3].bytes == 72);
  for (const auto& row : table) {
    CHECK(row.type == "half");
    CHECK(row.op == "avg");
    CHECK(row.outOfPlace.wrong == 0);
    CHECK(row.inPlace.wrong == 0);
  }
  // Only rank 0 reports: one header, one note about the rounding.
  CHECK(r.out.find("# Out of bounds") == r.out.rfind("# Out of bounds"));
  const std::string note = "-b 9 is not a multiple of the size of half (2 bytes)";
  CHECK(r.err.find(note) != std::string::npos);
  CHECK(r.err.find(note) == r.err.rfind(note));
  CHECK(r.err.find("-e 99 is not a multiple") != std::string::npos);
}
