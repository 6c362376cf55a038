#include "integrations/torch/src/elastic.hpp"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

namespace tutti_torch {
namespace {

using GroupPtr = c10::intrusive_ptr<ProcessGroupTutti>;

// A refused argument is the caller's mistake (ValueError); anything else (a timeout, a peer
// gone during the call) is a RuntimeError, as torch's collectives raise.
void check(tuttiResult_t result, const char* what) {
  if (result == tuttiSuccess) return;
  const std::string message = std::string("tutti: ") + what + ": " + tutti_get_last_error();
  if (result == tuttiInvalidArgument) throw py::value_error(message);
  throw std::runtime_error(message);
}

GroupPtr adopt(tuttiComm_t comm) {
  return c10::make_intrusive<ProcessGroupTutti>(comm);
}

GroupPtr shrink(const ProcessGroupTutti& group, const std::vector<int>& exclude, bool dead) {
  tuttiComm_t survivors = nullptr;
  {
    py::gil_scoped_release waitingForTheOthers;
    check(tutti_comm_shrink(group.comm(), exclude.data(), static_cast<int>(exclude.size()),
                            &survivors, dead ? TUTTI_SHRINK_DEAD : TUTTI_SHRINK_DEFAULT),
          "shrink");
  }
  return adopt(survivors);
}

py::bytes growToken(const ProcessGroupTutti& group) {
  tuttiUniqueId token;
  check(tutti_comm_grow_id(group.comm(), &token), "grow_token");
  return py::bytes(token.internal, sizeof token.internal);
}

GroupPtr grow(const ProcessGroupTutti& group, int newSize) {
  tuttiComm_t grown = nullptr;
  {
    py::gil_scoped_release waitingForTheOthers;
    check(tutti_comm_grow(group.comm(), newSize, nullptr, -1, &grown), "grow");
  }
  return adopt(grown);
}

GroupPtr join(const py::bytes& token, int rank, int newSize,
              std::optional<std::chrono::milliseconds> timeout) {
  const std::string bytes = token;
  tuttiUniqueId id;
  if (bytes.size() != sizeof id.internal)
    throw py::value_error("tutti: join: the grow token has " + std::to_string(bytes.size()) +
                          " bytes, not " + std::to_string(sizeof id.internal) +
                          " (ProcessGroupTutti.grow_token's)");
  std::memcpy(id.internal, bytes.data(), bytes.size());
  // Checked before joining: once joined, the members count on this rank.
  if (timeout && timeout->count() < 1)
    throw py::value_error("tutti: join: timeout must be at least 1 ms, got " +
                          std::to_string(timeout->count()) + " ms");
  tuttiComm_t grown = nullptr;
  {
    py::gil_scoped_release waitingForTheMembers;
    check(tutti_comm_grow(nullptr, newSize, &id, rank, &grown), "join");
  }
  GroupPtr group = adopt(grown);
  if (timeout) check(tutti_comm_set_timeout(grown, timeout->count()), "setting the timeout");
  return group;
}

}  // namespace

void bindElastic(GroupClass& group) {
  group
      .def("shrink", &shrink, py::arg("exclude") = std::vector<int>{}, py::arg("dead") = true,
           "The survivors' group (tutti_comm_shrink): every rank but those in exclude and, with "
           "dead, those this rank finds gone, renumbered in order. Called by every rank that "
           "stays; this group fails every later call.")
      .def("grow_token", &growToken,
           "A token (bytes) for newcomers to join this group's grown form "
           "(tutti_comm_grow_id); hand it over privately: it carries the job's secret.")
      .def("grow", &grow, py::arg("new_size"),
           "The group enlarged to new_size ranks, on a member (ranks kept; tutti_comm_grow). "
           "This group stays usable.")
      .def_static("join", &join, py::arg("token"), py::arg("rank"), py::arg("new_size"),
                  py::arg("timeout") = py::none(),
                  "A newcomer's side of grow: rank in [members' size, new_size).");
}

}  // namespace tutti_torch
