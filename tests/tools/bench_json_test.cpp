// -J's document (docs/bench-json.md) round-trips: results -> JSON text -> results, unchanged.
#include <catch2/catch.hpp>

#include "bench/json_report.hpp"

using namespace tutti::bench;

TEST_CASE("the JSON report round-trips", "[bench][json]") {
  BenchOptions options;
  options.collective = "allgather";
  options.algorithms = {"ring", "tree"};
  Results r;
  r.nranks = 2;
  r.ranks = {{0, 0, 100, "a"}, {1, 0, 200, "b"}};
  r.cores = 16;
  r.transports = {"shm"};
  r.rows.push_back({"allgather",
                    "ring",
                    1024,
                    128,
                    "float",
                    "none",
                    -1,
                    {1.5e-6, {0.5, 0.25}, 0, 2.5e-6},
                    {1.25e-6, {0.75, 0.375}, 3, 2e-6}});
  r.rows.push_back({"allgather",
                    "tree",
                    1024,
                    128,
                    "float",
                    "none",
                    -1,
                    {1e-3, {1.0, 0.5}, std::nullopt, 2e-3},
                    {1e-3, {1.0, 0.5}, std::nullopt, 0}});
  r.avgBusBw = 0.40625;
  r.failedChecks = 1;

  nlohmann::json document = toJson(options, r);
  CHECK(document["machine"]["hosts"] == nlohmann::json({"a", "b"}));
  CHECK(document["configuration"]["algorithms"] == nlohmann::json({"ring", "tree"}));
  CHECK(document["summary"]["ok"] == false);
  CHECK(document["rows"][1]["out_of_place"]["wrong"].is_null());

  Results back = resultsFromJson(nlohmann::json::parse(document.dump()));
  CHECK(back.nranks == 2);
  CHECK(back.cores == 16);
  CHECK(back.transports == r.transports);
  REQUIRE(back.ranks.size() == 2);
  CHECK(back.ranks[1].host == "b");
  CHECK(back.ranks[1].pid == 200);
  REQUIRE(back.rows.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const ResultRow &a = r.rows[i], &b = back.rows[i];
    CHECK(findMatch(back.rows, a) == &back.rows[i]);
    CHECK(b.count == a.count);
    for (auto [x, y] : {std::pair{&a.outOfPlace, &b.outOfPlace}, {&a.inPlace, &b.inPlace}}) {
      CHECK(y->seconds == Approx(x->seconds));
      CHECK(y->maxSeconds == Approx(x->maxSeconds));
      CHECK(y->bandwidth.algbw == x->bandwidth.algbw);
      CHECK(y->bandwidth.busbw == x->bandwidth.busbw);
      CHECK(y->wrong == x->wrong);
    }
  }
  CHECK(back.avgBusBw == r.avgBusBw);
  CHECK(back.failedChecks == 1);

  document["rows"][0].erase("bytes");
  CHECK_THROWS_WITH(resultsFromJson(document), Catch::Contains("bytes"));
  CHECK_THROWS(resultsFromJson(nlohmann::json{{"schema", "other/9"}}));
}
