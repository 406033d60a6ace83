// Where the warren-worker binary is (isolation = "process" starts it for each child): the file
// $WARREN_WORKER_BINARY names, else beside the running warren, in the build tree's isolation
// directory, or in the package's lib/warren directory.
#pragma once

#include <filesystem>
#include <stdexcept>

namespace warren::runtime {

// Throws std::runtime_error naming the places it looked in.
std::filesystem::path find_worker_binary();

}  // namespace warren::runtime
