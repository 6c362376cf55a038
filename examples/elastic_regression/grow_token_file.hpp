// Handing a grow token from the survivors to the replacement tuttirun starts (tuttirun --elastic):
// the survivors' rank 0 writes it to $TUTTI_ELASTIC_DIR/grow-<k>.token for the k-th grow, and the
// replacement reads the file tuttirun names in TUTTI_GROW_TOKEN_FILE. The directory is the job's
// own (0700); the token carries the job secret, without which the store refuses a newcomer.
#pragma once

#include <chrono>
#include <string>

#include "tutti/tutti.h"

namespace elastic_example {

// Where the survivors put the token of their k-th grow (k from 1).
std::string growTokenPath(const std::string& elasticDir, int grow);

// Written whole or not at all (a temporary file renamed), readable by the job's user only.
// Throws std::runtime_error naming the path.
void writeGrowToken(const std::string& path, const tuttiUniqueId& token);

// Waits until the file is there, up to `patience`; throws std::runtime_error naming it then.
tuttiUniqueId awaitGrowToken(const std::string& path, std::chrono::seconds patience);

}  // namespace elastic_example
