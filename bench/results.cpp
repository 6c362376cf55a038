#include "bench/results.hpp"

namespace tutti::bench {

const ResultRow* findMatch(const std::vector<ResultRow>& rows, const ResultRow& row) {
  for (const auto& r : rows) {
    if (r.collective == row.collective && r.algorithm == row.algorithm && r.bytes == row.bytes &&
        r.type == row.type && r.op == row.op && r.root == row.root) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace tutti::bench
