// Look-ups by name in a loaded Config (names are unique: the loader refuses duplicates).
#include "config/config.h"

#include <algorithm>

namespace warren::config {
namespace {

template <typename Entry>
const Entry* find_by_name(const std::vector<Entry>& entries, std::string_view name) {
  const auto found = std::find_if(entries.begin(), entries.end(),
                                  [name](const Entry& entry) { return entry.name == name; });
  return found == entries.end() ? nullptr : &*found;
}

}  // namespace

const QueueConfig* Config::find_queue(std::string_view name) const {
  return find_by_name(queues, name);
}

const ExchangeConfig* Config::find_exchange(std::string_view name) const {
  return find_by_name(exchanges, name);
}

const WorkerConfig* Config::find_worker(std::string_view name) const {
  return find_by_name(workers, name);
}

}  // namespace warren::config
