// A bounded randomised run over the importer: fixtures with bytes flipped, inserted, deleted or
// truncated (fixed seed, so a failure replays) either load or throw an Error; nothing else.
#include <fstream>
#include <random>
#include <sstream>

#include "base/error.hpp"
#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

std::string readFixture(const std::string& name) {
  std::ifstream file(fixture(name), std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string mutate(std::string text, std::mt19937& random) {
  const std::string alphabet = "<>/=\"' \n-!?x0123456789abcdef\xff\xc3";
  int edits = 1 + static_cast<int>(random() % 8);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    size_t at = random() % text.size();
    char c = alphabet[random() % alphabet.size()];
    switch (random() % 4) {
      case 0: text[at] = c; break;
      case 1: text.insert(at, 1, c); break;
      case 2: text.erase(at, 1 + random() % 16); break;
      default: text.resize(at);
    }
  }
  return text;
}

TEST_CASE("mutated fixtures load or fail with an Error, never crash") {
  Warnings warnings;
  warnings.expect();  // unknown elements from mutated names
  std::mt19937 random(20261129);
  int loaded = 0, refused = 0;
  for (const char* name :
       {"aws-p4d.xml", "oci-bm-gpu-h100.xml", "dgx1-v100.xml", "fused-2host.xml"}) {
    std::string original = readFixture(name);
    for (int i = 0; i < 300; ++i) {
      try {
        Topology topo = parseXml(mutate(original, random), name);
        searchRings(topo);
        ++loaded;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  CHECK(loaded + refused == 1200);
  CHECK(refused > 0);
}

}  // namespace
}  // namespace tutti::topology::test
