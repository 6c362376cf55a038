// The collectives' table: busbw factors as nccl-tests' PERFORMANCE.md, layouts for a whole array
// S, and expected values that a collective simulated here in memory matches (and a wrong one
// does not).
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "bench/check_data.hpp"
#include "bench/collectives.hpp"

using namespace tutti::bench;

namespace {

const CollectiveSpec& spec(const char* name) {
  const CollectiveSpec* c = findCollective(name);
  REQUIRE(c);
  return *c;
}

// The receive buffer of `rank` after a correct out-of-place collective on int64 inputs from
// CheckData (sum), built from the collective's definition.
std::vector<int64_t> simulate(const std::string& name, const CheckData& data, size_t count,
                              int rank, int n, int root) {
  auto input = [&](int r, size_t i) { return data.value(r, i); };
  auto reduced = [&](size_t i) {
    int64_t acc = 0;
    for (int r = 0; r < n; ++r) acc += input(r, i);
    return acc;
  };
  std::vector<int64_t> out;
  const auto ur = static_cast<size_t>(rank);
  if (name == "allreduce" || (name == "reduce" && rank == root)) {
    for (size_t i = 0; i < count; ++i) out.push_back(reduced(i));
  } else if (name == "reducescatter") {
    for (size_t i = 0; i < count; ++i) out.push_back(reduced(ur * count + i));
  } else if (name == "allgather") {
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i) out.push_back(input(q, i));
  } else if (name == "alltoall") {
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i) out.push_back(input(q, ur * count + i));
  } else if (name == "broadcast") {
    for (size_t i = 0; i < count; ++i) out.push_back(input(root, i));
  } else if (name == "sendrecv") {
    for (size_t i = 0; i < count; ++i) out.push_back(input((rank + n - 1) % n, i));
  }
  return out;
}

int64_t countWrong(const CollectiveSpec& c, const CheckData& data, const Layout& l,
                   const std::vector<int64_t>& recv, int rank, int n, int root) {
  int64_t wrong = 0;
  for (const Expected& e : c.expected(l, rank, n, root, false)) {
    REQUIRE(e.offset + e.count <= recv.size());
    wrong += data.countWrong(recv.data() + e.offset, e.count, e.firstIndex, e.source);
  }
  return wrong;
}

}  // namespace

TEST_CASE("busbw factors are nccl-tests'", "[bench]") {
  CHECK(spec("allreduce").busFactor(4) == Approx(1.5));
  for (const char* name : {"reducescatter", "allgather", "alltoall"}) {
    CHECK(spec(name).busFactor(4) == Approx(0.75));
  }
  for (const char* name : {"broadcast", "reduce", "sendrecv"}) CHECK(spec(name).busFactor(4) == 1);
  CHECK(findCollective("gossip") == nullptr);
  CHECK(collectiveNames().find("barrier") != std::string::npos);
}

TEST_CASE("layouts split the whole array S as nccl-tests does", "[bench]") {
  // 100 elements over 3 ranks: 33 per rank and block.
  Layout rs = spec("reducescatter").layout(100, 1, 3);
  CHECK((rs.count == 33 && rs.sendCount == 99 && rs.recvCount == 33));
  Layout ag = spec("allgather").layout(100, 2, 3);
  CHECK((ag.count == 33 && ag.sendCount == 33 && ag.recvCount == 99 && ag.inPlaceSend == 66));
  Layout a2a = spec("alltoall").layout(100, 0, 3);
  CHECK((a2a.count == 33 && a2a.sendCount == 99 && a2a.recvCount == 99));
  Layout ar = spec("allreduce").layout(100, 0, 3);
  CHECK((ar.count == 100 && ar.recvCount == 100));
  CHECK(spec("barrier").layout(100, 0, 3).recvCount == 0);
}

TEST_CASE("expected values match a correct collective and catch a wrong one", "[bench]") {
  const int n = 3, root = 1;
  for (const auto& c : collectives()) {
    if (!c.moves) continue;
    const CheckData data(tuttiInt64, c.reduces ? tuttiSum : tuttiMax, n);
    for (int rank = 0; rank < n; ++rank) {
      INFO(c.name << " rank " << rank);
      const Layout l = c.layout(60, rank, n);
      std::vector<int64_t> recv = simulate(c.name, data, l.count, rank, n, root);
      REQUIRE(recv.size() == (c.name == std::string("reduce") && rank != root ? 0 : l.recvCount));
      CHECK(countWrong(c, data, l, recv, rank, n, root) == 0);
      if (recv.empty()) continue;
      recv[recv.size() / 2] += 1;
      CHECK(countWrong(c, data, l, recv, rank, n, root) == 1);
    }
  }
}

TEST_CASE("*_perf sizes: per-rank blocks rounded down to 16 bytes, as nccl-tests'",
          "[bench][nccl]") {
  // nccl-tests: base = (count / nranks) & ~(16 / eltSize - 1), then S = base * nranks.
  for (const char* name : {"allgather", "reducescatter", "alltoall"}) {
    INFO(name);
    CHECK(ncclTestsElements(spec(name), 2, 4, 2) == 0);       // 8 B of floats on 2 ranks
    CHECK(ncclTestsElements(spec(name), 16, 4, 2) == 16);     // 8 floats each: two 16 B
    CHECK(ncclTestsElements(spec(name), 24, 4, 4) == 16);     // 6 each: 4
    CHECK(ncclTestsElements(spec(name), 1000, 1, 3) == 960);  // int8: 333 each: 320
    CHECK(ncclTestsElements(spec(name), 9, 8, 1) == 8);       // one rank: still 16 B blocks
  }
  for (const char* name : {"allreduce", "broadcast", "reduce", "sendrecv"}) {
    CHECK(ncclTestsElements(spec(name), 9, 4, 2) == 9);
  }
}
