// device_case.hpp's checks, compiled once: every dtype x op x protocol x collective instantiates
// the protocol's schedules on CPU threads, which costs minutes of compile time per file that does.
#include "tests/unit/kernels/device_case.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "tests/unit/kernels/reference.hpp"

namespace tutti::kernels::test {
namespace {

constexpr uint32_t kSlots = 4;

template <typename T, typename Op>
int runTyped(DeviceRing& ring, RedOp op, const Case& c) {
  std::mt19937_64 rng(c.seed);
  const int n = c.nranks;
  std::vector<BufferLayout> layouts;
  std::vector<std::vector<T>> inputs(n);
  std::vector<Buffer> sendBufs, recvBufs;             // in place: recvBufs[r] is unused
  std::vector<std::vector<unsigned char>> before[2];  // every buffer's bytes, before
  std::vector<const T*> srcs;
  std::vector<T*> dsts;
  for (int r = 0; r < n; ++r) {
    const BufferLayout l = layoutOf(c.collective, n, r, c.root, c.count);
    layouts.push_back(l);
    const size_t offset = c.aligned ? 0 : sizeof(T) * static_cast<size_t>(1 + r % 3);
    const size_t sendElems = c.inPlace ? std::max(l.sendCount, l.recvCount) : l.sendCount;
    sendBufs.emplace_back(sendElems * sizeof(T), offset);
    recvBufs.emplace_back(c.inPlace ? 0 : l.recvCount * sizeof(T), offset);
    const size_t sendAt = c.inPlace ? l.sendOffset : 0;
    for (size_t i = 0; i < l.sendCount; ++i) {
      inputs[r].push_back(ringInput<T>(rng, op));
      sendBufs[r].set(sendAt + i, inputs[r][i]);
    }
    T* base = reinterpret_cast<T*>(sendBufs[r].data());
    srcs.push_back(base + sendAt);
    dsts.push_back(c.inPlace ? base : reinterpret_cast<T*>(recvBufs[r].data()));
    for (int k = 0; k < 2; ++k) {
      Buffer& b = k == 0 ? sendBufs[r] : recvBufs[r];
      before[k].emplace_back(b.data(), b.data() + b.bytes());
    }
  }

  const auto status =
      c.protocol == Protocol::kSimple
          ? ring.run<device::Simple, T, Op>(c.collective, c.algorithm, srcs, dsts, c.count, c.root)
          : ring.run<device::LL, T, Op>(c.collective, c.algorithm, srcs, dsts, c.count, c.root);
  for (const auto s : status) REQUIRE(s == device::Status::kOk);

  const bool sameEverywhere =
      c.collective != Collective::kReduceScatter && c.collective != Collective::kReduce;
  int bad = 0;
  std::vector<T> x;
  for (int r = 0; r < n; ++r) {
    const BufferLayout& l = layouts[r];
    Buffer& out = c.inPlace ? sendBufs[r] : recvBufs[r];
    const size_t outAt = c.inPlace ? l.recvOffset : 0;
    const size_t outEnd = l.writes ? outAt + l.recvCount : outAt;
    CHECK(sendBufs[r].guardsIntact());
    CHECK(recvBufs[r].guardsIntact());
    for (size_t j = 0; l.writes && j < l.recvCount; ++j) {
      x.clear();
      for (const Source& s : sourcesOf(c.collective, n, c.root, c.count, r, j)) {
        x.push_back(inputs[s.rank][s.index]);
      }
      double want = 0;
      const T got = out.get<T>(outAt + j);
      const T first = (c.inPlace ? sendBufs[0] : recvBufs[0]).get<T>(outAt + j);
      const bool same = !sameEverywhere || std::memcmp(&got, &first, sizeof(T)) == 0;
      if ((!matches(got, x.data(), static_cast<int>(x.size()), op, Mode::kSmallInts, &want) ||
           !same) &&
          ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " element " << j << ": got " << toDouble(got) << " want "
                              << want << (same ? "" : " (differs from rank 0)"));
      }
    }
    // Every byte outside the output as it was.
    for (int k = 0; k < 2; ++k) {
      Buffer& b = k == 0 ? sendBufs[r] : recvBufs[r];
      const bool holdsOutput = &b == &out;
      for (size_t i = 0; i < b.bytes(); ++i) {
        const bool inOutput = holdsOutput && i >= outAt * sizeof(T) && i < outEnd * sizeof(T);
        if (!inOutput && b.data()[i] != before[k][r][i] && ++bad <= 3) {
          UNSCOPED_INFO("rank " << r << (k == 0 ? " send" : " receive") << " buffer byte " << i
                                << " changed");
        }
      }
    }
  }
  return bad;
}

}  // namespace

std::string describe(DataType dtype, RedOp op, const Case& c) {
  std::ostringstream out;
  out << collectiveName(c.collective) << (c.algorithm == Algorithm::kTree ? " (tree) " : " ")
      << (c.protocol == Protocol::kSimple ? "Simple " : "LL ") << typeName(dtype) << " "
      << opName(op) << " ranks " << c.nranks << " channels " << c.nchannels << " count " << c.count
      << " root " << c.root << (c.inPlace ? " in place" : " out of place")
      << (c.aligned ? " aligned" : " unaligned") << " seed " << c.seed << " team " << c.teamSize;
  for (size_t i = 0; i < c.orders.size(); ++i) {
    out << (i == 0 ? " rings" : " |");
    for (const int rank : c.orders[i]) out << " " << rank;
  }
  return out.str();
}

int runCase(DeviceRing& ring, DataType dtype, RedOp op, const Case& c) {
  int bad = 0;
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() { bad = runTyped<T, Op>(ring, op, c); });
  });
  return bad;
}

void check(DataType dtype, RedOp op, const Case& c) {
  INFO(describe(dtype, op, c));
  DeviceRing ring(c.nranks, c.nchannels, kSlots, c.slotBytes);
  ring.setTeamSize(c.teamSize);
  if (!c.orders.empty()) ring.setOrders(c.orders);
  CHECK(runCase(ring, dtype, op, c) == 0);
}

}  // namespace tutti::kernels::test
