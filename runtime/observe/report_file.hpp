// Writing a diagnostic file (a flight-recorder dump, a trace) from inside the runtime. It runs
// while an operation is failing or a communicator is going away, so it never throws: a write that
// fails logs a warning naming the path and the operation carries on.
#pragma once

#include <string>

namespace tutti::runtime {

// Writes text to path through a temporary file and a rename, so a reader never sees half a file.
// False (after a WARN naming `what` and the path) when it could not.
bool writeReportFile(const std::string& path, const std::string& text, const char* what);

}  // namespace tutti::runtime
