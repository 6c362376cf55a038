#include "transport/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>

#include "base/error.hpp"

namespace tutti::transport {
namespace {

bool sameHost(const Reach& a, const Reach& b) {
  return a.hostId == b.hostId;
}
bool anyPair(const Reach&, const Reach&) {
  return true;
}
// auto takes UCX between hosts that both have an RDMA port (where it beats tcp), if built with it.
bool rdmaBetweenHosts(const Reach& a, const Reach& b) {
  return ucxBuilt() && a.hostId != b.hostId && a.rdmaPorts > 0 && b.rdmaPorts > 0;
}

// The built-in transports, one line each. A deque: registering one keeps the others where
// selections point to them.
std::deque<TransportKind>& kinds() {
  static std::deque<TransportKind> table = {
      // clang-format off
      {.name = "shm", .reaches = sameHost, .make = makeShmTransport, .sharesMemory = true, .keepsNotes = true},
      {.name = "ucx", .reaches = anyPair, .autoReaches = rdmaBetweenHosts, .make = makeUcxTransport},
      {.name = "tcp", .reaches = anyPair, .make = makeTcpTransport, .listens = true},
      // clang-format on
  };
  return table;
}

const TransportKind* find(std::string_view name) {
  for (const TransportKind& kind : kinds())
    if (name == kind.name) return &kind;
  return nullptr;
}

std::string joinNames(const std::vector<const TransportKind*>& some) {
  std::vector<std::string_view> names;
  for (const TransportKind* kind : some) names.push_back(kind->name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<const TransportKind*> transportKinds() {
  std::vector<const TransportKind*> all;
  for (const TransportKind& kind : kinds()) all.push_back(&kind);
  return all;
}

void registerTransport(const TransportKind& kind) {
  if (find(kind.name))
    raise(ErrorCode::kInvalidUsage, "a transport named '{}' is registered already", kind.name);
  kinds().push_back(kind);
}

TransportSelection::TransportSelection() : text_("auto"), allowed_(transportKinds()) {}

TransportSelection TransportSelection::parse(const std::string& text) {
  TransportSelection selection;
  if (text.empty() || text == "auto") return selection;
  selection.text_ = text;
  selection.allowed_.clear();
  const bool excluding = text[0] == '^';
  std::vector<const TransportKind*> named;
  size_t start = excluding ? 1 : 0;
  while (true) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string word = text.substr(start, comma - start);
    if (word.empty())
      raise(ErrorCode::kInvalidArgument, "TUTTI_TRANSPORT='{}' has an empty item", text);
    if (word == "auto")
      raise(ErrorCode::kInvalidArgument, "TUTTI_TRANSPORT='{}': auto stands alone, not in a list",
            text);
    const TransportKind* kind = find(word);
    if (!kind)
      raise(ErrorCode::kInvalidArgument,
            "TUTTI_TRANSPORT='{}': '{}' is not a transport (known: {})", text, word,
            joinNames(transportKinds()));
    if (std::find(named.begin(), named.end(), kind) != named.end())
      raise(ErrorCode::kInvalidArgument, "TUTTI_TRANSPORT='{}' names '{}' twice", text, word);
    named.push_back(kind);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  if (!excluding) {
    selection.allowed_ = std::move(named);
    selection.named_ = true;
    return selection;
  }
  for (const TransportKind* kind : transportKinds())
    if (std::find(named.begin(), named.end(), kind) == named.end())
      selection.allowed_.push_back(kind);
  if (selection.allowed_.empty())
    raise(ErrorCode::kInvalidArgument, "TUTTI_TRANSPORT='{}' excludes every transport ({})", text,
          joinNames(transportKinds()));
  return selection;
}

const TransportKind* TransportSelection::choose(const Reach& a, const Reach& b) const {
  for (const TransportKind* kind : allowed_)
    if ((!named_ && kind->autoReaches) ? kind->autoReaches(a, b) : kind->reaches(a, b)) return kind;
  return nullptr;
}

std::string TransportSelection::describe() const {
  return joinNames(allowed_);
}

}  // namespace tutti::transport
