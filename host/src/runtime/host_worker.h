// The host's own record of a running worker and of the transport it consumes on, shared by
// host.cc (start, stop) and host_reload.cc (reload). Not for anyone else.
#pragma once

#include <memory>

#include "config/config.h"
#include "plugin/handler_instance.h"
#include "plugin/held_plugin_file.h"
#include "runtime/dispatcher.h"
#include "runtime/host.h"
#include "runtime/process_runner.h"
#include "runtime/worker_context.h"
#include "transport/transport.h"

namespace warren::runtime {

// A transport and the config it was made for: run()'s, or one a reload started for the workers
// it added or changed. Closed (and a reload's destroyed) once no worker consumes on it.
struct Host::Generation {
  std::shared_ptr<const config::Config> config;
  std::shared_ptr<transport::Transport> owned;  // null for run()'s transport (the caller's)
  transport::Transport* transport = nullptr;
  std::size_t workers = 0;  // live workers on it (the run() thread only)
};

// Destroyed in reverse order: the dispatcher (its threads joined, their worker processes
// stopped), the handler (the plugin's instance, then the library's last reference with the last
// instance) or the process runner, the context, and only then the transport and the config it
// points into.
struct Host::Worker {
  std::shared_ptr<const config::Config> owner;  // keeps *config alive
  const config::WorkerConfig* config = nullptr;
  std::shared_ptr<Generation> generation;
  DuplicateFilter* duplicate_filter = nullptr;
  std::unique_ptr<WorkerContext> context;
  // isolation = "thread": the plugin loaded in the host. isolation = "process": the plugin file
  // as the host checked and read it, which every child loads (held_plugin_file.h), the runner of
  // its worker processes (the host never loads the plugin) and the file's info.
  std::unique_ptr<plugin::HandlerInstance> handler;
  std::unique_ptr<plugin::HeldPluginFile> held_plugin;
  std::unique_ptr<ProcessRunner> runner;
  plugin::PluginInfo process_plugin;
  std::unique_ptr<Dispatcher> dispatcher;

  const plugin::PluginInfo& plugin_info() const {
    return handler ? handler->info() : process_plugin;
  }
};

}  // namespace warren::runtime
