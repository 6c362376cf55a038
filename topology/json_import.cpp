// Import of the JSON that toJson writes (tutti-topo --json, TUTTI_TOPO_DUMP_FILE=x.json): the graph
// node by node and link by link, as it was exported; exporting it again gives the same JSON.
// Checked as carefully as the NCCL XML import, with the same bounds (import_common.hpp): every
// node and link must be one that an import or the probe could have built (kinds, parents, which
// nodes a link of each kind joins, one host), so that paths, searches and the XML export meet
// only graphs they know. Errors (kInvalidArgument) name the file and a JSON path (nodes[3].kind),
// or the line and column of malformed JSON. Keys the import does not read draw a warning; "rings"
// is derived from the graph (computed again on export) and not read.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "topology/bandwidth.hpp"
#include "topology/import_common.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

using nlohmann::json;

constexpr size_t kMaxJsonDepth = 16;  // the export nests 6 deep (rings, channels, gpus)
constexpr size_t kMaxPus = 1 << 16;   // hardware threads of host 0
constexpr double kMaxBw = 1e6;        // GB/s: past any link an import builds (64 C2C lanes at
                                      // 10^7 MB/s are 640,000)
constexpr size_t kMaxMessageBytes = 200;

// A value as a message shows it: short scalars as written, long strings and containers by size.
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      return text.size() <= 40 ? value.dump() : fmt::format("a string of {} bytes", text.size());
    }
    case json::value_t::array: return fmt::format("an array of {}", value.size());
    case json::value_t::object: return "an object";
    default: return value.dump();
  }
}

// A key as a step of a path: ".name" for a plain name, else quoted (["a b"]) or, past 40 bytes,
// by its size: a message shows no control character and no key of a megabyte.
std::string keyStep(std::string_view key) {
  const bool plain =
      !key.empty() && key.size() <= 40 && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      });
  if (plain) return fmt::format(".{}", key);
  if (key.size() > 40) return fmt::format("[a key of {} bytes]", key.size());
  return fmt::format("[{}]", json(key).dump());
}

// "nodes[3].kind" from the steps to a value; the document itself is "top level".
std::string joinPath(std::string path) {
  if (path.starts_with(".")) path.erase(0, 1);
  return path.empty() ? "top level" : path;
}

// Builds the document from the parser's events as nlohmann's own DOM parser does, refusing on the
// way what that parser would take silently: nesting past kMaxJsonDepth (each level is parser
// state) and a key twice in one object (the last would win). The path of the value being built
// names where. nlohmann's parser is iterative: depth costs no stack.
class DomBuilder final : public json::json_sax_t {
 public:
  DomBuilder(std::string_view text, std::string_view name) : text_(text), name_(name) {}
  json take() { return std::move(root_); }

  bool null() override { return add(json(nullptr)); }
  bool boolean(bool value) override { return add(json(value)); }
  bool number_integer(number_integer_t value) override { return add(json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return add(json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return add(json(value)); }
  bool string(string_t& value) override { return add(json(std::move(value))); }
  bool binary(binary_t&) override { return false; }  // not in JSON text
  bool start_object(std::size_t) override { return open(json::value_t::object); }
  bool start_array(std::size_t) override { return open(json::value_t::array); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    json& object = *stack_.back();
    if (object.contains(key))
      failTopologyFile(name_, pathTo(keyStep(key)), "the key appears twice in its object");
    member_ = &object[key];
    key_ = key;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const json::exception& error) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ...", or
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'" (no place: from the
    // byte position, which is past the token).
    std::string_view what = error.what();
    if (size_t end = what.find("] "); end != std::string_view::npos) what.remove_prefix(end + 2);
    std::string where;
    constexpr std::string_view kAt = "parse error at ";
    if (size_t colon = what.find(": "); what.starts_with(kAt) && colon != what.npos) {
      where = what.substr(kAt.size(), colon - kAt.size());
      what.remove_prefix(colon + 2);
    } else {
      const std::string_view before = text_.substr(0, std::min(position, text_.size()));
      where = fmt::format("line {}, column {}", 1 + std::count(before.begin(), before.end(), '\n'),
                          before.size() - (before.rfind('\n') + 1));
    }
    // The last token read is quoted as it was: bytes outside printable ASCII as escapes.
    std::string message;
    for (char c : what.substr(0, kMaxMessageBytes))
      message += c >= 0x20 && c < 0x7f ? std::string(1, c)
                                       : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    failTopologyFile(name_, where, "malformed JSON: " + message);
  }

 private:
  // Where the next value goes: the document, the end of the open array, or the key just read.
  std::string nextStep() const {
    if (stack_.empty()) return "";
    if (stack_.back()->is_array()) return fmt::format("[{}]", stack_.back()->size());
    return keyStep(key_);
  }
  // The path of the open container's member `step`.
  std::string pathTo(std::string_view step) const {
    std::string out;
    for (const std::string& each : steps_) out += each;
    return joinPath(out + std::string(step));
  }

  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(value));
      return &top.back();
    }
    *member_ = std::move(value);
    return member_;
  }
  bool add(json value) {
    place(std::move(value));
    return true;
  }
  bool open(json::value_t type) {
    std::string step = nextStep();
    if (stack_.size() >= kMaxJsonDepth)
      failTopologyFile(name_, pathTo(step),
                       fmt::format("nested deeper than {} levels", kMaxJsonDepth));
    // A container on the stack is the last value of its parent, which grows only once it closed:
    // the pointers stay valid (as in nlohmann's parser).
    stack_.push_back(place(json(type)));
    steps_.push_back(std::move(step));
    return true;
  }
  bool close() {
    stack_.pop_back();
    steps_.pop_back();
    return true;
  }

  std::string_view text_, name_;
  json root_;
  std::vector<json*> stack_;
  std::vector<std::string> steps_;
  json* member_ = nullptr;
  std::string key_;
};

std::optional<NodeKind> nodeKindNamed(std::string_view name) {
  for (NodeKind kind : {NodeKind::kCpu, NodeKind::kPciSwitch, NodeKind::kGpu, NodeKind::kNvSwitch,
                        NodeKind::kNic, NodeKind::kNet})
    if (name == nodeKindName(kind)) return kind;
  return std::nullopt;
}

std::optional<LinkKind> linkKindNamed(std::string_view name) {
  for (LinkKind kind :
       {LinkKind::kNvLink, LinkKind::kPcie, LinkKind::kSmp, LinkKind::kNet, LinkKind::kC2C})
    if (name == linkKindName(kind)) return kind;
  return std::nullopt;
}

// The keys a node of each kind has in the export.
std::vector<std::string_view> nodeKeys(NodeKind kind) {
  std::vector<std::string_view> keys = {"id",     "kind",  "busId",   "host",
                                        "parent", "index", "inferred"};
  auto add = [&](std::initializer_list<std::string_view> more) {
    keys.insert(keys.end(), more.begin(), more.end());
  };
  switch (kind) {
    case NodeKind::kCpu: add({"numaId", "arch", "package", "vendor", "family", "model"}); break;
    case NodeKind::kGpu: add({"sm", "dev", "rank"}); [[fallthrough]];
    case NodeKind::kPciSwitch:
    case NodeKind::kNic: add({"pciClass", "pciGts", "pciWidth"}); break;
    case NodeKind::kNet: add({"guid", "port", "linkLayer", "name", "dev"}); break;
    case NodeKind::kNvSwitch: break;
  }
  return keys;
}

class Importer {
 public:
  Importer(const json& root, std::string_view name) : root_(root), name_(name) {}

  Topology run() {
    if (!root_.is_object()) fail("top level", "expected an object, got " + describe(root_));
    checkKeys(root_, "", {"hosts", "notes", "nodes", "links", "pus", "rings"}, "unknown key");
    readHosts();
    if (const json* notes = array(root_, "", "notes", false))
      for (size_t i = 0; i < notes->size(); ++i)
        topo_.notes.push_back(text(*notes, i, "notes", kMaxFileBytes));
    const json& nodes = *array(root_, "", "nodes", true);
    for (size_t i = 0; i < nodes.size(); ++i) readNode(nodes[i], i);
    const json& links = *array(root_, "", "links", true);
    for (size_t i = 0; i < links.size(); ++i) readLink(links[i], i);
    checkTreeLinks();
    readPus();
    topo_.computePaths();
    return std::move(topo_);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    failTopologyFile(name_, where, what);
  }
  static std::string at(const std::string& where, std::string_view key) {
    return joinPath(where + keyStep(key));
  }
  static std::string named(int id) { return fmt::format("nodes[{}]", id); }

  static const json* member(const json& object, const char* key) {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  // Keys the import does not read draw a warning, as unknown XML elements do.
  void checkKeys(const json& object, const std::string& where,
                 const std::vector<std::string_view>& known, std::string_view what) const {
    for (const auto& [key, value] : object.items())
      if (std::find(known.begin(), known.end(), key) == known.end())
        warnTopologyFile(name_, at(where, key), fmt::format("{}: ignored", what));
  }

  // Each reader: the member `key` of `object`, checked; when absent, `otherwise`, or an error
  // when there is none (a key the export always writes and the graph cannot do without).
  int64_t integer(const json& object, const std::string& where, const char* key, int64_t min,
                  int64_t max, std::optional<int64_t> otherwise = std::nullopt) const {
    const json* value = member(object, key);
    if (!value) {
      if (!otherwise) fail(at(where, key), "missing");
      return *otherwise;
    }
    int64_t out = 0;
    bool ok = false;
    if (value->is_number_unsigned()) {
      uint64_t raw = value->get<uint64_t>();
      ok = raw <= static_cast<uint64_t>(INT64_MAX);
      out = ok ? static_cast<int64_t>(raw) : 0;
    } else if (value->is_number_integer()) {
      out = value->get<int64_t>();
      ok = true;
    }
    if (!ok || out < min || out > max)
      fail(at(where, key),
           fmt::format("expected an integer in {}..{}, got {}", min, max, describe(*value)));
    return out;
  }

  double number(const json& object, const std::string& where, const char* key, double min,
                double max) const {
    const json* value = member(object, key);
    if (!value) fail(at(where, key), "missing");
    double out = value->is_number() ? value->get<double>() : NAN;
    if (!std::isfinite(out) || out < min || out > max)
      fail(at(where, key),
           fmt::format("expected a number in {}..{}, got {}", min, max, describe(*value)));
    return out;
  }

  std::string text(const json& object, const std::string& where, const char* key, size_t maxBytes,
                   std::optional<std::string> otherwise = std::nullopt) const {
    const json* value = member(object, key);
    if (!value) {
      if (!otherwise) fail(at(where, key), "missing");
      return *otherwise;
    }
    return checkedText(*value, at(where, key), maxBytes);
  }
  // An element of an array of strings.
  std::string text(const json& array, size_t i, const char* name, size_t maxBytes) const {
    return checkedText(array[i], fmt::format("{}[{}]", name, i), maxBytes);
  }
  std::string checkedText(const json& value, const std::string& where, size_t maxBytes) const {
    if (!value.is_string()) fail(where, "expected a string, got " + describe(value));
    const auto& out = value.get_ref<const std::string&>();
    if (out.size() > maxBytes)
      fail(where, fmt::format("{} bytes long (at most {})", out.size(), maxBytes));
    return out;
  }

  const json* array(const json& object, const std::string& where, const char* key,
                    bool required) const {
    const json* value = member(object, key);
    if (!value && required) fail(at(where, key), "missing");
    if (value && !value->is_array())
      fail(at(where, key), "expected an array, got " + describe(*value));
    return value;
  }

  void readHosts() {
    const json& hosts = *array(root_, "", "hosts", true);
    if (hosts.size() > kMaxNodes)
      fail("hosts", fmt::format("{} hosts, more than {}", hosts.size(), kMaxNodes));
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < hosts.size(); ++i) {
      std::string hash = text(hosts, i, "hosts", kMaxTextBytes);
      if (auto [it, fresh] = seen.emplace(hash, i); !fresh)
        fail(fmt::format("hosts[{}]", i), fmt::format("the same as hosts[{}]", it->second));
      topo_.addHost(std::move(hash));
    }
  }

  int cpuOf(int id) const {
    while (topo_.node(id).kind != NodeKind::kCpu) id = topo_.node(id).parent;
    return id;
  }

  // What may hold what, as the importers and the probe build the tree: CPUs and the NVSwitch are
  // roots; PCI switches, GPUs and NICs sit under a CPU or a switch; ports under their NIC; all on
  // the host of their parent, which comes first in the list.
  void checkParent(const std::string& where, const Node& node) const {
    const bool root = node.kind == NodeKind::kCpu || node.kind == NodeKind::kNvSwitch;
    const std::string kindName = nodeKindName(node.kind);
    if (root) {
      if (node.parent >= 0)
        fail(at(where, "parent"), fmt::format("a {} node has none (-1)", kindName));
      return;
    }
    const char* wanted = node.kind == NodeKind::kNet ? "its NIC" : "a CPU or a PCI switch";
    if (node.parent < 0)
      fail(at(where, "parent"), fmt::format("a {} node sits under {}", kindName, wanted));
    const Node& parent = topo_.node(node.parent);
    const bool fits = node.kind == NodeKind::kNet
                          ? parent.kind == NodeKind::kNic
                          : parent.kind == NodeKind::kCpu || parent.kind == NodeKind::kPciSwitch;
    if (!fits)
      fail(at(where, "parent"), fmt::format("a {} node sits under {}, not under {} ({})", kindName,
                                            wanted, named(node.parent), nodeKindName(parent.kind)));
    if (parent.host != node.host)
      fail(at(where, "parent"), fmt::format("{} is on host {}, this node on host {}",
                                            named(node.parent), parent.host, node.host));
  }

  // A PCI device's class, rate and width: all three or (a NIC attached to its CPU) none.
  void readPci(const json& value, const std::string& where, Node& node) const {
    bool any = member(value, "pciClass") || member(value, "pciGts") || member(value, "pciWidth");
    if (node.kind == NodeKind::kNic && !any) {
      if (topo_.node(node.parent).kind != NodeKind::kCpu)
        fail(at(where, "pciWidth"), "missing: only a NIC directly under a CPU has no PCIe link");
      return;
    }
    node.pciClass = static_cast<uint32_t>(integer(value, where, "pciClass", 0, 0xffffff));
    node.pciGts = number(value, where, "pciGts", 0, 64);
    if (pcieLaneBw(node.pciGts) == 0)
      fail(at(where, "pciGts"),
           fmt::format("{} is not a PCIe rate (2.5, 5, 8, 16, 32 or 64 GT/s)", node.pciGts));
    node.pciWidth = static_cast<int>(integer(value, where, "pciWidth", 1, 32));
  }

  void readNode(const json& value, size_t i) {
    const std::string where = fmt::format("nodes[{}]", i);
    if (!value.is_object()) fail(where, "expected an object, got " + describe(value));
    if (int64_t id = integer(value, where, "id", 0, INT_MAX); id != static_cast<int64_t>(i))
      fail(at(where, "id"),
           fmt::format("{}, but nodes are listed in id order: expected {}", id, i));
    Node node;
    const std::string kindName = text(value, where, "kind", kMaxTextBytes);
    std::optional<NodeKind> kind = nodeKindNamed(kindName);
    if (!kind)
      fail(at(where, "kind"),
           fmt::format("unknown node kind \"{}\" (CPU, PCI, GPU, NVS, NIC or NET)", kindName));
    node.kind = *kind;
    checkKeys(value, where, nodeKeys(node.kind),
              fmt::format("not a field of a {} node", nodeKindName(node.kind)));
    node.busId = text(value, where, "busId", kMaxTextBytes);
    if (node.busId.empty()) fail(at(where, "busId"), "empty");
    if (node.kind == NodeKind::kNvSwitch && node.busId != "nvswitch")
      fail(at(where, "busId"), "the NVSwitch node (all of a host's NVSwitches) is named nvswitch");
    if (topo_.hosts().empty()) fail(at(where, "host"), "no host to be on: hosts is empty");
    node.host = static_cast<int>(
        integer(value, where, "host", 0, static_cast<int64_t>(topo_.hosts().size()) - 1));
    node.parent =
        static_cast<int>(integer(value, where, "parent", -1, static_cast<int64_t>(i) - 1));
    checkParent(where, node);
    switch (node.kind) {
      case NodeKind::kCpu:
        node.numaId = static_cast<int>(integer(value, where, "numaId", -1, 65535, -1));
        node.package = static_cast<int>(integer(value, where, "package", -1, 1 << 24, -1));
        node.arch = text(value, where, "arch", kMaxTextBytes, "");
        node.vendor = text(value, where, "vendor", kMaxTextBytes, "");
        node.family = static_cast<int>(integer(value, where, "family", -1, 65535, -1));
        node.model = static_cast<int>(integer(value, where, "model", -1, 65535, -1));
        break;
      case NodeKind::kGpu:
        node.sm = static_cast<int>(integer(value, where, "sm", 0, 1000, 0));
        node.dev = static_cast<int>(integer(value, where, "dev", -1, 1 << 20, -1));
        node.rank = static_cast<int>(integer(value, where, "rank", -1, 1 << 24, -1));
        [[fallthrough]];
      case NodeKind::kPciSwitch:
      case NodeKind::kNic: readPci(value, where, node); break;
      case NodeKind::kNet:
        node.name = text(value, where, "name", kMaxTextBytes, "");
        node.guid = text(value, where, "guid", kMaxTextBytes, "");
        if (!node.guid.empty() && !parseHex(node.guid, UINT64_MAX))
          fail(at(where, "guid"),
               fmt::format("\"{}\": expected a hex number up to 0x{:x}", node.guid, UINT64_MAX));
        node.port = static_cast<int>(integer(value, where, "port", 0, 1024, 0));
        node.dev = static_cast<int>(integer(value, where, "dev", -1, 1 << 20, -1));
        node.linkLayer = text(value, where, "linkLayer", kMaxTextBytes, "");
        break;
      case NodeKind::kNvSwitch: break;
    }
    node.inferred = text(value, where, "inferred", kMaxFileBytes, "");
    if (std::string problem = nodeProblem(topo_, node); !problem.empty()) fail(where, problem);
    // Derived (the node's ordinal among its kind on its host): checked when given.
    const int64_t index = static_cast<int64_t>(topo_.nodesOf(node.kind, node.host).size());
    if (int64_t given = integer(value, where, "index", 0, INT_MAX, index); given != index)
      fail(at(where, "index"), fmt::format("{}, but this is {} {} of host {}", given,
                                           nodeKindName(node.kind), index, node.host));
    // PCI devices nest at most as deep as the XML import takes them.
    int depth = 0;
    if (node.pciWidth > 0 || node.kind == NodeKind::kNic)
      depth = topo_.node(node.parent).kind == NodeKind::kCpu ? 1 : pciDepth_[node.parent] + 1;
    if (depth > kMaxPciDepth)
      fail(at(where, "parent"), fmt::format("nested deeper than {}", kMaxPciDepth));
    topo_.addNode(std::move(node));
    pciDepth_.push_back(depth);
  }

  // Which nodes a link of each kind joins, as the importers and the probe add them.
  std::string shapeProblem(int from, int to, LinkKind kind) const {
    const Node &a = topo_.node(from), &b = topo_.node(to);
    const bool tree = a.parent == to || b.parent == from;
    const Node& child = a.parent == to ? a : b;
    const auto ownCpu = [&](int gpu, int cpu) {
      return topo_.node(gpu).kind == NodeKind::kGpu && topo_.node(cpu).kind == NodeKind::kCpu &&
             cpuOf(gpu) == cpu;
    };
    switch (kind) {
      case LinkKind::kPcie:
        if (tree ? child.kind != NodeKind::kNet : a.pciWidth > 0 && b.pciWidth > 0) return "";
        return "a PCIe link joins a node to its parent, or two PCI devices";
      case LinkKind::kNet:
        if (tree && child.kind == NodeKind::kNet) return "";
        return "a NET link joins a NIC and its own port";
      case LinkKind::kSmp:
        if (a.kind == NodeKind::kCpu && b.kind == NodeKind::kCpu) return "";
        return "an SMP link joins two CPUs";
      case LinkKind::kNvLink:
        if (a.kind == NodeKind::kGpu && (b.kind == NodeKind::kGpu || b.kind == NodeKind::kNvSwitch))
          return "";
        if (b.kind == NodeKind::kGpu && a.kind == NodeKind::kNvSwitch) return "";
        if (ownCpu(from, to) || ownCpu(to, from)) return "";
        return "an NVLink joins a GPU to a GPU, to its host's NVSwitch or to its own CPU";
      case LinkKind::kC2C:
        if (ownCpu(from, to) || ownCpu(to, from)) return "";
        return "a C2C link joins a GPU and its own CPU";
    }
    return "unknown link kind";
  }

  void readLink(const json& value, size_t i) {
    const std::string where = fmt::format("links[{}]", i);
    if (!value.is_object()) fail(where, "expected an object, got " + describe(value));
    checkKeys(value, where, {"from", "to", "kind", "bw", "count"}, "not a field of a link");
    const int64_t last = static_cast<int64_t>(topo_.nodes().size()) - 1;
    if (last < 0) fail(where, "a link in a file without nodes");
    const int from = static_cast<int>(integer(value, where, "from", 0, last));
    const int to = static_cast<int>(integer(value, where, "to", 0, last));
    const std::string kindName = text(value, where, "kind", kMaxTextBytes);
    std::optional<LinkKind> kind = linkKindNamed(kindName);
    if (!kind)
      fail(at(where, "kind"),
           fmt::format("unknown link kind \"{}\" (NVLink, PCIe, SMP, NET or C2C)", kindName));
    const double bw = number(value, where, "bw", 0, kMaxBw);
    const int count = static_cast<int>(integer(value, where, "count", 1, kMaxLinksPerGpu, 1));
    if (from == to) fail(where, fmt::format("a link from {} to itself", named(from)));
    if (topo_.node(from).host != topo_.node(to).host)
      fail(where, fmt::format("{} is on host {}, {} on host {}: hosts meet only through their "
                              "network",
                              named(from), topo_.node(from).host, named(to), topo_.node(to).host));
    if (std::string problem = shapeProblem(from, to, *kind); !problem.empty())
      fail(where,
           fmt::format("{} ({} to {}: {} to {})", problem, named(from), named(to),
                       nodeKindName(topo_.node(from).kind), nodeKindName(topo_.node(to).kind)));
    if (count != 1 && *kind != LinkKind::kNvLink && *kind != LinkKind::kC2C)
      fail(at(where, "count"), fmt::format("{}: only NVLink and C2C links bundle lanes", count));
    for (int id : topo_.linksFrom(from))
      if (topo_.links()[id].to == to && topo_.links()[id].kind == *kind)
        fail(where, fmt::format("the same {} link from {} to {} as links[{}]", kindName,
                                named(from), named(to), id));
    if (topo_.node(from).kind == NodeKind::kGpu &&
        (*kind == LinkKind::kNvLink || *kind == LinkKind::kC2C)) {
      int& lanes = lanes_[{from, *kind}];
      lanes += count;
      if (lanes > kMaxLinksPerGpu)
        fail(where, fmt::format("more than {} links of this kind from one GPU", kMaxLinksPerGpu));
    }
    topo_.addDirectedLink(from, to, *kind, bw, count);
  }

  bool hasLink(int from, int to, LinkKind kind) const {
    const std::vector<int>& out = topo_.linksFrom(from);
    return std::any_of(out.begin(), out.end(), [&](int id) {
      return topo_.links()[id].to == to && topo_.links()[id].kind == kind;
    });
  }

  // Every node is linked to its parent both ways (a port by a NET link, others by PCIe): the
  // tree's links, which the XML export writes as nesting.
  void checkTreeLinks() const {
    for (size_t id = 0; id < topo_.nodes().size(); ++id) {
      const Node& child = topo_.nodes()[id];
      if (child.parent < 0) continue;
      LinkKind kind = child.kind == NodeKind::kNet ? LinkKind::kNet : LinkKind::kPcie;
      const int self = static_cast<int>(id);
      if (!hasLink(child.parent, self, kind) || !hasLink(self, child.parent, kind))
        fail(named(self), fmt::format("no {} link to and from its parent {}", linkKindName(kind),
                                      named(child.parent)));
    }
  }

  void readPus() {
    const json* pus = array(root_, "", "pus", false);
    if (!pus) return;
    if (pus->size() > kMaxPus)
      fail("pus", fmt::format("{} hardware threads, more than {}", pus->size(), kMaxPus));
    std::set<int> seen;
    for (size_t i = 0; i < pus->size(); ++i) {
      const std::string where = fmt::format("pus[{}]", i);
      const json& value = (*pus)[i];
      if (!value.is_object()) fail(where, "expected an object, got " + describe(value));
      checkKeys(value, where, {"os", "core", "package", "cpu"}, "not a field of a hardware thread");
      Pu pu;
      pu.os = static_cast<int>(integer(value, where, "os", 0, 1 << 24));
      pu.core = static_cast<int>(integer(value, where, "core", -1, 1 << 24, -1));
      pu.package = static_cast<int>(integer(value, where, "package", -1, 1 << 24, -1));
      const int64_t last = static_cast<int64_t>(topo_.nodes().size()) - 1;
      if (last < 0) fail(at(where, "cpu"), "no node to name: nodes is empty");
      pu.cpu = static_cast<int>(integer(value, where, "cpu", 0, last));
      if (topo_.node(pu.cpu).kind != NodeKind::kCpu || topo_.node(pu.cpu).host != 0)
        fail(at(where, "cpu"), fmt::format("{} is not a CPU of host 0", named(pu.cpu)));
      if (!seen.insert(pu.os).second)
        fail(at(where, "os"), fmt::format("OS CPU {} listed twice", pu.os));
      topo_.pus.push_back(pu);
    }
  }

  const json& root_;
  std::string_view name_;
  Topology topo_;
  std::vector<int> pciDepth_;                      // per node: PCI devices down to it (0: none)
  std::map<std::pair<int, LinkKind>, int> lanes_;  // NVLink and C2C lanes from each GPU
};

}  // namespace

Topology parseJson(std::string_view text, const std::string& name) {
  DomBuilder builder(text, name);
  if (!json::sax_parse(text.begin(), text.end(), &builder))
    failTopologyFile(name, "top level", "malformed JSON");
  const json root = builder.take();
  return Importer(root, name).run();
}

Topology loadJsonFile(const std::string& path) {
  return parseJson(readTopologyText(path), path);
}

}  // namespace tutti::topology
