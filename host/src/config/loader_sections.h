// The loader's parts: one function per section of warren.toml, each reading its keys from the
// document root into `config` and reporting problems to the context. config_loader.cc runs them
// in the order declared here, so later sections check their references against earlier ones
// (queues and outboxes -> exchanges, workers -> queues and exchanges).
#pragma once

#include <filesystem>

#include "config/config.h"
#include "config/config_loader.h"
#include "config/problem_list.h"
#include "config/table_reader.h"

namespace warren::config {

struct LoadContext {
  ProblemList& problems;
  std::filesystem::path base_dir;  // relative file paths resolve against it; empty: as given
  EnvironmentLookup environment;   // never empty
  bool metrics_ipv6 = true;        // LoadOptions::metrics_ipv6

  std::filesystem::path resolve(const std::filesystem::path& file) const {
    return file.is_relative() && !base_dir.empty() ? base_dir / file : file;
  }
};

void load_host_section(TableReader& root, const LoadContext& context, Config& config);
void load_log_section(TableReader& root, const LoadContext& context, Config& config);
void load_metrics_section(TableReader& root, const LoadContext& context, Config& config);
void load_broker_section(TableReader& root, const LoadContext& context, Config& config);
void load_exchanges(TableReader& root, const LoadContext& context, Config& config);
void load_queues(TableReader& root, const LoadContext& context, Config& config);
void load_workers(TableReader& root, const LoadContext& context, Config& config);
void load_outboxes(TableReader& root, const LoadContext& context, Config& config);

// Part of load_workers: isolation, and concurrency or processes with the keys of its mode
// (load_worker_isolation.cc). Reads prefetch from `worker`, so call it after prefetch is read.
void read_worker_isolation(TableReader& entry, WorkerConfig& worker);

}  // namespace warren::config
