// File descriptors between the processes of one host (CUDA IPC's exported memory, NCCL's way): a
// labelled SCM_RIGHTS message to a datagram socket each process binds in the abstract namespace
// ("\0tutti-fd/<job>/<rank>": no file to clean up, out of reach of other network namespaces). The
// kernel stamps every message with its sender's pid (SO_PASSCRED), so a mailbox takes descriptors
// only from the pids it was told to expect: anyone else's are closed, and logged as drops.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.hpp"
#include "base/drop_log.hpp"
#include "base/socket.hpp"

namespace tutti {

class FdMailbox {
 public:
  // Binds rank's mailbox of `job` (a token the job's processes share, e.g. its bootstrap tag),
  // taking messages from `peers` only. Throws kSystem when it cannot (the name is taken: another
  // process is that rank of that job).
  FdMailbox(std::string job, int rank, std::vector<pid_t> peers);

  // Sends a duplicate of `fd` labelled `label` to rank `to`'s mailbox, retrying until it exists
  // (the peer may not have bound it yet); kTimeout naming the rank when the deadline passes first.
  void send(int to, uint64_t label, int fd, const Deadline& deadline) const;
  // The descriptor labelled `label` from process `from` (one of the peers), waiting for it;
  // messages for later receives are kept. kTimeout naming both when the deadline passes first.
  Fd receive(pid_t from, uint64_t label, const Deadline& deadline);

 private:
  // Reads one message, keeping its descriptor if an expected peer sent it; false when none came
  // before the deadline.
  bool readOne(const Deadline& deadline);
  std::string nameOf(int rank) const;

  std::string job_;
  int rank_;
  std::vector<pid_t> peers_;
  Fd socket_;
  std::map<std::pair<pid_t, uint64_t>, Fd> kept_;
  DropLog drops_;
};

}  // namespace tutti
