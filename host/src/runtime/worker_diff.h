// What a reload does to each worker (runtime/host_reload.cc): the running workers and the
// reloaded config's, compared by name. Pure: no plugin is loaded here, the plugin files' content
// hashes are given (plugin_content.h), so it is unit-tested alone.
//
//   unchanged  every field that shapes the worker is equal, and so is its plugin file's content:
//              left alone (its consumer is not even re-subscribed)
//   removed    in the running config only: stops consuming, drains, is unloaded
//   added      in the reloaded config only: starts
//   changed    anything else: the new instance starts, then the old one stops and drains
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace warren::runtime {

struct WorkerChange {
  enum class Kind { unchanged, removed, added, changed };
  std::string worker;
  Kind kind = Kind::unchanged;
  // changed: what, in words, for the log line ("prefetch 20 -> 50", "plugin file content").
  std::vector<std::string> what;
};

// A worker as it runs: its config and the content hash of the plugin file it was loaded from.
struct RunningWorker {
  const config::WorkerConfig* config = nullptr;
  std::string plugin_hash;
};

// One entry per worker of either side: the reloaded config's workers in its order, then the
// removed ones in the running order. `new_hashes` maps each plugin name of `reloaded` to the
// content hash of its file now.
std::vector<WorkerChange> diff_workers(const std::vector<RunningWorker>& running,
                                       const std::vector<config::WorkerConfig>& reloaded,
                                       const std::map<std::string, std::string>& new_hashes);

// "unchanged", "removed", "added" or "changed: prefetch 20 -> 50, plugin file content".
std::string describe(const WorkerChange& change);

}  // namespace warren::runtime
