// tutti-validate's plan and judgement without a job (tools/tutti-validate/): the round-robin meets
// every pair exactly once in disjoint rounds; verdicts relative to the median blame a host whose
// every pair is slow, a link whose hosts each have a normal pair, and neither when all is within
// the thresholds; latency counts too; the second pass pairs each host of a slow pair that has no
// other measurement with a host whose pairs were normal; inventories (from a real machine's
// topology and sysfs fixtures) are compared against the majority or an expected one; rails are the
// interfaces every host has, and one is slow beside the others' median.
#include <catch2/catch.hpp>
#include <set>

#include "tools/tutti-validate/heatmap.hpp"
#include "tools/tutti-validate/inventory.hpp"
#include "tools/tutti-validate/pairing.hpp"
#include "tools/tutti-validate/report.hpp"
#include "tools/tutti-validate/verdict.hpp"

using namespace tutti::validate;
using Catch::Matchers::Contains;

namespace {

std::vector<std::string> names(int hosts) {
  std::vector<std::string> out;
  for (int h = 0; h < hosts; ++h) out.push_back("h" + std::to_string(h + 1));
  return out;
}

// Every pair of `hosts` at `gbs` both ways and 10 us, then `change` applied.
template <typename Change>
std::vector<PairResult> allPairs(int hosts, Change change) {
  std::vector<PairResult> pairs;
  for (int a = 0; a < hosts; ++a)
    for (int b = a + 1; b < hosts; ++b) {
      PairResult p{a, b, 10.0 + 0.01 * a, 10.0 - 0.01 * b, 10.0};
      change(p);
      pairs.push_back(p);
    }
  return pairs;
}

}  // namespace

TEST_CASE("validate: every pair meets once, in disjoint rounds", "[validate]") {
  for (int hosts = 1; hosts <= 9; ++hosts) {
    INFO("hosts " << hosts);
    const std::vector<Round> rounds = roundRobin(hosts);
    CHECK(rounds.size() == static_cast<size_t>(hosts < 2 ? 0 : hosts % 2 ? hosts : hosts - 1));
    std::set<Pair> met;
    for (const Round& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        CHECK(a < b);
        CHECK(b < hosts);
        CHECK(busy.insert(a).second);
        CHECK(busy.insert(b).second);
        CHECK(met.insert({a, b}).second);
        CHECK(partnerIn(round, a) == b);
        CHECK(partnerIn(round, b) == a);
      }
      CHECK(busy.size() >= static_cast<size_t>(hosts - 1));  // at most one rests
    }
    CHECK(met.size() == static_cast<size_t>(hosts * (hosts - 1) / 2));
  }
}

TEST_CASE("validate: verdicts relative to the median", "[validate]") {
  const Thresholds defaults;
  SECTION("all within the thresholds: healthy") {
    const Verdict verdict = judge(names(5), allPairs(5, [](PairResult&) {}), defaults);
    CHECK(verdict.healthy());
    CHECK(verdict.medianGBs == Approx(10.0).epsilon(0.01));
  }
  SECTION("a host whose every pair is slow is blamed, alone") {
    const auto pairs = allPairs(5, [](PairResult& p) {
      if (p.b == 2) p.gbsBtoA = 3;  // h3 sends slowly to the hosts before it
      if (p.a == 2) p.gbsAtoB = 3;  // and after it
    });
    const Verdict verdict = judge(names(5), pairs, defaults);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == Finding::Kind::kHost);
    CHECK(verdict.findings[0].a == 2);
    CHECK_THAT(verdict.findings[0].reason,
               Contains("every pair slow") && Contains("h3->h1 at 30% of median"));
  }
  SECTION("a slow pair whose hosts have normal pairs is the link") {
    const auto pairs = allPairs(4, [](PairResult& p) {
      if (p.a == 0 && p.b == 1) p.gbsAtoB = 2.9;
    });
    const Verdict verdict = judge(names(4), pairs, defaults);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == Finding::Kind::kLink);
    CHECK(verdict.findings[0].a == 0);
    CHECK(verdict.findings[0].b == 1);
    CHECK_THAT(verdict.findings[0].reason, Contains("h1->h2 at 29% of median") &&
                                               Contains("every other pair of h1 and h2 normal"));
  }
  SECTION("latency above the factor is slow; the threshold is settable") {
    const auto pairs = allPairs(4, [](PairResult& p) {
      if (p.a == 2 && p.b == 3) p.latencyUs = 25;
    });
    const Verdict verdict = judge(names(4), pairs, defaults);
    REQUIRE(verdict.findings.size() == 1);
    CHECK_THAT(verdict.findings[0].reason, Contains("latency 2.5x median (25 vs 10 us)"));
    CHECK(judge(names(4), pairs, Thresholds{0.93, 3.0}).healthy());
  }
}

TEST_CASE("validate: a slow pair is measured again, and blamed only if slow both times",
          "[validate]") {
  // 4 hosts, all pairs: (0,1) and (2,3) slow in the first pass.
  std::vector<PairResult> pairs = allPairs(4, [](PairResult& p) {
    if ((p.a == 0 && p.b == 1) || (p.a == 2 && p.b == 3)) p.gbsAtoB = 2;
  });
  const Verdict first = judge(names(4), pairs, Thresholds{});
  const std::vector<Round> again = confirmRounds(pairs, first);
  REQUIRE(again.size() == 1);  // disjoint: one round
  CHECK(again[0] == Round{{0, 1}, {2, 3}});
  // Measured again: (0,1) was noise, (2,3) is slow again (and slower one way).
  keepBest(pairs, {{0, 1, 10, 10, 10}, {2, 3, 1, 3, 10}});
  const Verdict second = judge(names(4), pairs, Thresholds{});
  REQUIRE(second.findings.size() == 1);
  CHECK(second.findings[0].kind == Finding::Kind::kLink);
  CHECK(second.findings[0].a == 2);
  CHECK(second.findings[0].b == 3);
  for (const PairResult& p : pairs) {  // the better of each direction
    if (p.a == 0 && p.b == 1) CHECK(p.gbsAtoB == 10);
    if (p.a == 2 && p.b == 3) CHECK((p.gbsAtoB == 2 && p.gbsBtoA == Approx(9.97)));
  }
  CHECK(confirmRounds(allPairs(4, [](PairResult&) {}),
                      judge(names(4), allPairs(4, [](PairResult&) {}), Thresholds{}))
            .empty());
}

TEST_CASE("validate: the second pass retests slow pairs' hosts against healthy ones",
          "[validate]") {
  // Quick mode's one round of 6 hosts: (0,5) (1,4) (2,3); (1,4) slow.
  std::vector<PairResult> pairs{{0, 5, 10, 10, 10}, {1, 4, 2, 10, 10}, {2, 3, 10, 10, 10}};
  const Verdict first = judge(names(6), pairs, Thresholds{});
  REQUIRE(first.findings.size() == 1);
  CHECK_THAT(first.findings[0].reason, Contains("the host or the link"));
  const std::vector<Round> retests = retestRounds(6, pairs, first);
  REQUIRE(retests.size() == 1);  // both fit in one round
  REQUIRE(retests[0].size() == 2);
  std::set<int> good{0, 2, 3, 5};
  for (const auto& [a, b] : retests[0]) {
    const bool aSuspect = a == 1 || a == 4, bSuspect = b == 1 || b == 4;
    CHECK(aSuspect != bSuspect);  // one end suspect, the other a good host
    CHECK(good.count(aSuspect ? b : a) == 1);
  }
  // h2 is slow with its good partner too: the host, not the link.
  for (const auto& [a, b] : retests[0]) pairs.push_back({a, b, 10, 10, 10});
  for (PairResult& p : pairs)
    if (p.a == 1)
      p.gbsAtoB = 2;
    else if (p.b == 1)
      p.gbsBtoA = 2;
  const Verdict second = judge(names(6), pairs, Thresholds{});
  REQUIRE(second.findings.size() == 1);
  CHECK(second.findings[0].kind == Finding::Kind::kHost);
  CHECK(second.findings[0].a == 1);
  CHECK(retestRounds(6, allPairs(6, [](PairResult&) {}),
                     judge(names(6), allPairs(6, [](PairResult&) {}), Thresholds{}))
            .empty());
}

TEST_CASE("validate: rails are the interfaces every host has, or those asked for", "[validate]") {
  // Host h's ethN at 10.N.0.h; docker0 at 172.17.0.1 everywhere; ib2 only on the second host.
  const auto nic = [](const std::string& name, int host) {
    return NetInterface{name, name == "docker0" ? "172.17.0.1"
                                                : "10." + std::to_string(name.back() - '0') +
                                                      ".0." + std::to_string(host)};
  };
  std::vector<std::vector<NetInterface>> interfaces;
  for (int host = 1; host <= 3; ++host) {
    auto& list = interfaces.emplace_back();
    for (const char* name : {"docker0", "eth0", "ib0", "ib1"}) list.push_back(nic(name, host));
    if (host == 2) list.push_back(nic("ib2", host));
  }
  SECTION("auto: the common ones with an address of their own per host, sorted") {
    const RailChoice choice = chooseRails(interfaces, {});
    CHECK(choice.rails == std::vector<std::string>{"eth0", "ib0", "ib1"});
    CHECK(choice.refused.empty());
  }
  SECTION("auto: none where fewer than two qualify") {
    CHECK(chooseRails({{nic("eth0", 1), nic("ib0", 1)}, {nic("eth0", 2), nic("ib1", 2)}}, {})
              .rails.empty());
    CHECK(chooseRails({}, {}).rails.empty());
  }
  SECTION("asked for: a host that lacks one, or one address everywhere, is named; not measured") {
    const RailChoice choice = chooseRails(interfaces, {"ib1", "ib2", "docker0"});
    CHECK(choice.rails == std::vector<std::string>{"ib1"});
    std::set<int> lacking;
    size_t shared = 0;
    for (const Finding& finding : choice.refused) {
      if (finding.kind == Finding::Kind::kInventory) {
        CHECK(finding.rail == "ib2");
        CHECK_THAT(finding.reason, Contains("no interface ib2"));
        lacking.insert(finding.a);
      } else {
        CHECK(finding.kind == Finding::Kind::kRail);
        CHECK(finding.rail == "docker0");
        CHECK_THAT(finding.reason, Contains("ranks 0 and 1 give docker0 the same address"));
        ++shared;
      }
    }
    CHECK(lacking == std::set<int>{0, 2});
    CHECK(shared == 1);
  }
}

TEST_CASE("validate: a rail is slow beside the median of the others", "[validate]") {
  const Thresholds defaults;
  std::vector<RailResult> rails = {{"ib0", 20.0}, {"ib1", 19.5}, {"ib2", 9.0}, {"ib3", 19.0}};
  const std::vector<Finding> findings = judgeRails(rails, defaults);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == Finding::Kind::kRail);
  CHECK(findings[0].rail == "ib2");
  CHECK(findings[0].a == -1);
  CHECK_THAT(findings[0].reason,
             Contains("all-reduce at 46% of the other rails' median (9 vs 19.5 GB/s"));
  CHECK((!rails[0].slow && !rails[1].slow && rails[2].slow && !rails[3].slow));
  // Two rails: each beside the other, not beside their mean (88% of the other, 94% of the mean).
  std::vector<RailResult> pair = {{"eth0", 1.0}, {"eth1", 0.88}};
  const std::vector<Finding> pairFindings = judgeRails(pair, defaults);
  REQUIRE(pairFindings.size() == 1);
  CHECK(pairFindings[0].rail == "eth1");
  CHECK_THAT(pairFindings[0].reason, Contains("at 88% of the other rails' median (0.88 vs 1 GB/s"));
  // Within the fraction, or a rail alone: nothing to say.
  std::vector<RailResult> close = {{"ib0", 20.0}, {"ib1", 18.8}};
  CHECK(judgeRails(close, defaults).empty());
  std::vector<RailResult> alone = {{"ib0", 1.0}};
  CHECK(judgeRails(alone, defaults).empty());
}

TEST_CASE("validate: findings on a rail say so, in the text and the JSON report", "[validate]") {
  Report report;
  report.hosts = names(3);
  report.mode = "full";
  report.pairs = allPairs(3, [](PairResult&) {});
  report.verdict = judge(report.hosts, report.pairs, report.thresholds);
  report.rails = {{"eth0", 1.0}, {"eth1", 0.1, true, {{1, 2, 0.01, 1.0, 10.0}}, {true}}};
  report.verdict.findings.push_back({Finding::Kind::kRail, -1, -1, "all-reduce at 18%", "eth1"});
  report.verdict.findings.push_back({Finding::Kind::kLink, 1, 2, "h2->h3 at 1%", "eth1"});
  const std::string text = formatReport(report);
  CHECK_THAT(text, Contains("suspect rail eth1: all-reduce at 18%\n") &&
                       Contains("suspect link h2-h3 on rail eth1: h2->h3 at 1%") &&
                       Contains("h1 | healthy\n") &&
                       Contains("h3 | suspect: link h2-h3 on rail eth1\n") &&
                       Contains("# all-reduce over rail eth1: busbw 0.1 GB/s  slow"));
  const nlohmann::json json = reportJson(report);
  CHECK(json["rails"].size() == 2);
  CHECK(json["rails"][1]["slow"] == true);
  CHECK(json["rails"][1]["pairs"][0]["gbs_a_to_b"] == 0.01);
  CHECK(json["findings"][0]["kind"] == "rail");
  CHECK(json["findings"][0]["hosts"].empty());
  CHECK(json["findings"][1]["hosts"] == nlohmann::json::array({1, 2}));
  CHECK(json["findings"][1]["rail"] == "eth1");
  CHECK(json["hosts"][0]["status"] == "healthy");
  CHECK(json["hosts"][1]["status"] == "suspect");
}

TEST_CASE("validate: a host's inventory from a real machine's topology and sysfs", "[validate]") {
  const auto topo =
      tutti::topology::loadTopologyFile(std::string(TUTTI_TOPO_FIXTURES) + "/azure-ndv5.xml");
  const auto rdma =
      tutti::topology::readRdmaDevices(std::string(TUTTI_SYSFS_FIXTURES) + "/ib-cx6-vpi");
  const Inventory inventory = inventoryOf(topo, rdma);
  CHECK(inventory.facts.at("GPUs") == "8");
  CHECK(inventory.facts.at("NUMA nodes") == "2");
  CHECK(inventory.facts.at("GPU 0001:00:00.0 PCIe") == "x16 32 GT/s");
  CHECK(inventory.facts.count("RDMA mlx5_0:1") == 1);
  // The fixture's port counters hold errors: named, whatever the other hosts have.
  CHECK_FALSE(inventory.errors.empty());
  const Inventory back = decodeInventory(encodeInventory(inventory));
  CHECK(back.facts == inventory.facts);
  CHECK(back.errors == inventory.errors);
  CHECK_THROWS_WITH(decodeInventory("X\tjunk\n"), Contains("malformed inventory line"));
}

TEST_CASE("validate: inventories against the majority or an expected one", "[validate]") {
  Inventory usual;
  usual.facts = {{"GPUs", "8"}, {"GPU 0000:1b:00.0 PCIe", "x16 32 GT/s"}, {"NICs", "4"}};
  Inventory odd = usual;
  odd.facts["GPUs"] = "7";
  odd.facts["GPU 0000:1b:00.0 PCIe"] = "x8 32 GT/s";
  SECTION("the host that differs from most, with what the others have") {
    const auto findings = compareInventories({usual, usual, odd, usual}, nullptr);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].kind == Finding::Kind::kInventory);
    CHECK(findings[0].a == 2);
    CHECK_THAT(findings[0].reason,
               Contains("GPUs 7, expected 8 (as 3 of 4 hosts)") &&
                   Contains("GPU 0000:1b:00.0 PCIe x8 32 GT/s, expected x16 32 GT/s"));
  }
  SECTION("no majority, no verdict") {
    CHECK(compareInventories({usual, odd}, nullptr).empty());
  }
  SECTION("against an expected topology, every host that differs") {
    const auto findings = compareInventories({odd, odd, usual}, &usual);
    REQUIRE(findings.size() == 2);
    CHECK_THAT(findings[1].reason, Contains("(the expected topology)"));
  }
  SECTION("error counters are named on their own") {
    Inventory noisy = usual;
    noisy.errors = {"mlx5_0:1 symbol_error 12"};
    const auto findings = compareInventories({usual, noisy, usual}, nullptr);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].a == 1);
    CHECK_THAT(findings[0].reason, Contains("mlx5_0:1 symbol_error 12"));
  }
}

TEST_CASE("validate: the heatmap colours slow directions and escapes host names", "[validate]") {
  Report report;
  report.hosts = {"h<1>", "h2", "h3"};
  report.pairs = {{0, 1, 10, 10, 10}, {0, 2, 10, 1, 10}};  // h3 -> h<1> slow; h2-h3 unmeasured
  report.verdict = judge(report.hosts, report.pairs, report.thresholds);
  const std::string svg = heatmapSvg(report);
  CHECK_THAT(svg, Contains("h&lt;1&gt;") && !Contains("h<1>"));
  size_t red = 0, grey = 0;
  for (size_t at = svg.find("#d73027"); at != std::string::npos; at = svg.find("#d73027", at + 1))
    ++red;
  for (size_t at = svg.find("#dddddd"); at != std::string::npos; at = svg.find("#dddddd", at + 1))
    ++grey;
  CHECK(red == 1);
  CHECK(grey == 5);  // the diagonal and the two directions between h2 and h3
}
