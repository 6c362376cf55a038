// Input files a user names (tables, reports, dumps) are read whole, and only when they are
// regular files: a directory or a device is refused with its name, and so is a FIFO, before it
// can block. Opening a FIFO that no process writes waits for a writer for ever, and no deadline
// of the job's covers it.
#pragma once

#include <string>

namespace tutti {

// The whole of the regular file at `path`; kInvalidArgument naming `where` when it cannot be
// opened or read, or is not a regular file.
std::string readRegularFile(const std::string& path, const std::string& where);

}  // namespace tutti
