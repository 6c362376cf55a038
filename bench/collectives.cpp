#include "bench/collectives.hpp"

#include <array>

namespace tutti::bench {
namespace {

double twiceShare(int n) {
  return 2.0 * (n - 1) / n;
}
double share(int n) {
  return static_cast<double>(n - 1) / n;
}
double one(int) {
  return 1.0;
}

// S elements on every rank, in place at the start of the receive buffer.
Layout whole(size_t elements, int, int) {
  return {elements, elements, elements, 0};
}
// S/n per rank: the send side holds n blocks (reduce-scatter).
Layout scatter(size_t elements, int, int n) {
  size_t c = elements / static_cast<size_t>(n);
  return {c, c * static_cast<size_t>(n), c, 0};
}
// S/n per rank: the receive side holds n blocks, the rank's own in place (allgather).
Layout gather(size_t elements, int rank, int n) {
  size_t c = elements / static_cast<size_t>(n);
  return {c, c, c * static_cast<size_t>(n), c * static_cast<size_t>(rank)};
}
// n blocks of S/n each way (alltoall).
Layout exchange(size_t elements, int, int n) {
  size_t c = elements / static_cast<size_t>(n);
  return {c, c * static_cast<size_t>(n), c * static_cast<size_t>(n), 0};
}
Layout none(size_t, int, int) {
  return {};
}

// One block per rank: block q is rank q's input from index firstIndex(q).
template <typename FirstIndex>
std::vector<Expected> blocks(size_t c, int n, FirstIndex firstIndex) {
  std::vector<Expected> out;
  for (int q = 0; q < n; ++q) out.push_back({c * static_cast<size_t>(q), c, q, firstIndex(q)});
  return out;
}

const std::array<CollectiveSpec, 8> kCollectives = {{
    {"allreduce", "all-reduce (all_reduce_perf)", true, false, true, twiceShare, whole,
     [](const CallArgs& a) {
       return tutti_allreduce(a.send, a.recv, a.count, a.dtype, a.op, a.comm, nullptr);
     },
     [](const Layout& l, int, int, int, bool) {
       return std::vector<Expected>{{0, l.count, Expected::kReduced, 0}};
     },
     [](int, int) { return true; }},
    {"reducescatter", "reduce-scatter (reduce_scatter_perf)", true, false, true, share, scatter,
     [](const CallArgs& a) {
       return tutti_reduce_scatter(a.send, a.recv, a.count, a.dtype, a.op, a.comm, nullptr);
     },
     [](const Layout& l, int rank, int, int, bool inPlace) {
       size_t mine = l.count * static_cast<size_t>(rank);  // in place: the rank's own block
       return std::vector<Expected>{{inPlace ? mine : 0, l.count, Expected::kReduced, mine}};
     },
     [](int, int) { return true; }},
    {"allgather", "all-gather (all_gather_perf)", false, false, true, share, gather,
     [](const CallArgs& a) {
       return tutti_allgather(a.send, a.recv, a.count, a.dtype, a.comm, nullptr);
     },
     [](const Layout& l, int, int n, int, bool) {
       return blocks(l.count, n, [](int) { return 0ul; });
     },
     [](int, int) { return true; }},
    {"broadcast", "broadcast (broadcast_perf)", false, true, true, one, whole,
     [](const CallArgs& a) {
       return tutti_broadcast(a.send, a.recv, a.count, a.dtype, a.root, a.comm, nullptr);
     },
     [](const Layout& l, int, int, int root, bool) {
       return std::vector<Expected>{{0, l.count, root, 0}};
     },
     [](int rank, int root) { return rank == root; }},
    {"reduce", "reduce (reduce_perf)", true, true, true, one, whole,
     [](const CallArgs& a) {
       return tutti_reduce(a.send, a.recv, a.count, a.dtype, a.op, a.root, a.comm, nullptr);
     },
     [](const Layout& l, int rank, int, int root, bool) {
       if (rank != root) return std::vector<Expected>{};
       return std::vector<Expected>{{0, l.count, Expected::kReduced, 0}};
     },
     [](int, int) { return true; }},
    {"alltoall", "all-to-all (alltoall_perf)", false, false, true, share, exchange,
     [](const CallArgs& a) {
       return tutti_alltoall(a.send, a.recv, a.count, a.dtype, a.comm, nullptr);
     },
     [](const Layout& l, int rank, int n, int, bool) {
       // Block q comes from rank q's block for this rank.
       return blocks(l.count, n, [&](int) { return l.count * static_cast<size_t>(rank); });
     },
     [](int, int) { return true; }},
    {"sendrecv", "send to rank+1, receive from rank-1, in one group (sendrecv_perf)", false, false,
     true, one, whole,
     [](const CallArgs& a) {
       tutti_group_start();
       tuttiResult_t sent =
           tutti_send(a.send, a.count, a.dtype, (a.rank + 1) % a.nranks, a.comm, nullptr);
       tuttiResult_t received = tutti_recv(a.recv, a.count, a.dtype,
                                           (a.rank + a.nranks - 1) % a.nranks, a.comm, nullptr);
       tuttiResult_t ended = tutti_group_end();
       return sent != tuttiSuccess ? sent : received != tuttiSuccess ? received : ended;
     },
     [](const Layout& l, int rank, int n, int, bool) {
       return std::vector<Expected>{{0, l.count, (rank + n - 1) % n, 0}};
     },
     [](int, int) { return true; }},
    {"barrier", "barrier latency", false, false, false, one, none,
     [](const CallArgs& a) { return tutti_barrier(a.comm, nullptr); },
     [](const Layout&, int, int, int, bool) { return std::vector<Expected>{}; },
     [](int, int) { return false; }},
}};

}  // namespace

size_t ncclTestsElements(const CollectiveSpec& spec, size_t elements, size_t typeBytes,
                         int nranks) {
  // A layout whose count for 2 elements on 2 ranks is 1 splits the array among the ranks.
  const bool blocks = spec.layout(2, 0, 2).count == 1;
  if (!blocks || typeBytes == 0 || typeBytes > 16) return elements;
  const size_t n = static_cast<size_t>(nranks);
  const size_t block = (elements / n) & ~(16 / typeBytes - 1);
  return block * n;
}

std::span<const CollectiveSpec> collectives() {
  return kCollectives;
}

const CollectiveSpec* findCollective(const std::string& name) {
  for (const auto& c : kCollectives) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string collectiveNames() {
  std::string out;
  for (const auto& c : kCollectives) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

}  // namespace tutti::bench
