#include "base/shm_leftovers.hpp"

#include <dirent.h>
#include <sys/mman.h>

#include <algorithm>
#include <memory>

namespace tutti {

std::vector<std::string> removeSharedMemory(const std::string& prefix) {
  std::vector<std::string> removed;
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/dev/shm"), closedir);
  if (!dir) return removed;  // no /dev/shm: nothing can have been left there
  while (const dirent* entry = readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0 && shm_unlink(("/" + name).c_str()) == 0)
      removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace tutti
