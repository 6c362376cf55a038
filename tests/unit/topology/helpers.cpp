#include "helpers.hpp"

#include <algorithm>
#include <filesystem>

namespace tutti::topology::test {
namespace {

// What a real dump makes tutti say, by file: the text and how many times.
struct KnownWarning {
  const char* file;
  const char* text;
  size_t times;
};
// azure-ncv4: each GPU's <nvlink> names the GPU itself (NCCL would link the GPU to itself).
constexpr KnownWarning kKnownWarnings[] = {
    {"azure-ncv4.xml", "an NVLink from the GPU to itself: ignored", 4},
};

}  // namespace

std::vector<std::string> fixtureFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(TUTTI_TOPO_FIXTURES)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".xml" || ext == ".json"))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Topology loadFixture(const std::string& file) {
  Warnings warnings;
  warnings.expect();
  const size_t before = warnings.all().size();
  Topology topo = loadTopologyFile(file);
  const std::vector<std::string> all = warnings.all();
  const std::vector<std::string> fresh(all.begin() + static_cast<long>(before), all.end());
  const std::string name = std::filesystem::path(file).filename().string();
  size_t known = 0;
  for (const KnownWarning& warning : kKnownWarnings) {
    if (name != warning.file) continue;
    const size_t times =
        static_cast<size_t>(std::count_if(fresh.begin(), fresh.end(), [&](const std::string& line) {
          return line.find(warning.text) != std::string::npos;
        }));
    INFO(name << ": '" << warning.text << "'");
    CHECK(times == warning.times);
    known += times;
  }
  INFO(name << "'s warnings: " << ::Catch::Detail::stringify(fresh));
  CHECK(fresh.size() == known);
  return topo;
}

}  // namespace tutti::topology::test
