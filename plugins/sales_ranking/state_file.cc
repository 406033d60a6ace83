// StateFile: a flushed temporary file (durable_file.h), rename(2) over the state file, then
// fsync of the directory.
#include "state_file.h"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "durable_file.h"

namespace livraria {

Ranking StateFile::load() const {
  std::error_code error;
  if (!std::filesystem::exists(path_, error)) {
    const auto directory = path_.has_parent_path() ? path_.parent_path() : ".";
    if (!std::filesystem::is_directory(directory, error)) {
      throw std::invalid_argument("state_file '" + path_.string() + "': directory '" +
                                  directory.string() + "' does not exist: create it first");
    }
    return Ranking{};
  }
  std::ifstream in(path_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    throw std::invalid_argument("state_file '" + path_.string() + "' cannot be read");
  }
  try {
    return Ranking::from_json(nlohmann::json::parse(text.str()));
  } catch (const std::exception& e) {
    throw std::invalid_argument("state_file '" + path_.string() +
                                "' does not hold a sales ranking: " + e.what() +
                                "; fix it or move it away to start from an empty ranking");
  }
}

void StateFile::save(const Ranking& ranking) const {
  const std::string content = ranking.to_json().dump() + "\n";
  const FlushedTempFile temp(path_, content, 0644, "ranking state");
  if (::rename(temp.path().c_str(), path_.c_str()) != 0) {
    const int rename_error = errno;
    throw io_error(rename_error, "cannot replace ranking state " + path_.string());
  }
  sync_directory(path_.has_parent_path() ? path_.parent_path() : ".");
}

}  // namespace livraria
