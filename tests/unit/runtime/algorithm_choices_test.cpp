// TUTTI_ALGO's choices live in the variable table (base/config.cpp), below the runtime, and must
// name exactly the all-reduce algorithms of the runtime's table, which tutti_comm_set_algorithm
// accepts: a new algorithm added to one and not the other fails here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "runtime/collectives/algorithm.hpp"

using namespace tutti;

TEST_CASE("TUTTI_ALGO accepts exactly the all-reduce algorithms of the table") {
  std::vector<std::string> inConfig;
  std::istringstream choices(config::find("TUTTI_ALGO").choices);
  for (std::string choice; std::getline(choices, choice, '|');) inConfig.push_back(choice);
  std::vector<std::string> inTable = runtime::allReduceChoices();
  CHECK(inTable.front() == "auto");
  CHECK(inTable.size() >= 5);  // auto, oneshot, ring, tree, direct at least
  std::sort(inConfig.begin(), inConfig.end());
  std::sort(inTable.begin(), inTable.end());
  CHECK(inConfig == inTable);
}
