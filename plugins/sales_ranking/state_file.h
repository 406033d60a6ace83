// Where the ranking survives restarts: one JSON file, replaced atomically on every save.
#pragma once

#include <filesystem>

#include "ranking.h"

namespace livraria {

class StateFile {
 public:
  explicit StateFile(std::filesystem::path path) : path_(std::move(path)) {}

  // The saved ranking, or an empty one when the file does not exist yet. Throws
  // std::invalid_argument naming the file when it cannot be read or is not a ranking (it is never
  // silently reset: that would count every event again).
  Ranking load() const;

  // Writes the whole ranking to a temporary file beside the state file, flushes it, and renames it
  // over the state file, so a crash leaves either the old or the new ranking, never half of one.
  // Throws std::system_error naming the file.
  void save(const Ranking& ranking) const;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace livraria
