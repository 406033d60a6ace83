// One worker as the host builds it, for dispatcher tests: a handler compiled into the test, its
// metrics, context and handler instance, and its dispatcher, started.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "in_process_plugin.h"
#include "observability/metrics.h"
#include "runtime/dispatcher.h"
#include "runtime/worker_context.h"

namespace warren::runtime {

// Settling through `transport`, or through each delivery when there is none.
struct WorkerUnderTest {
  WorkerUnderTest(std::shared_ptr<testing_support::InProcessPlugin> plugin,
                  const DispatcherOptions& options, transport::Publisher* transport = nullptr,
                  DuplicateFilter* filter = nullptr)
      : context(options.worker, plugin->info().name, {}, metrics),
        handler(std::move(plugin), context),
        worker_metrics(metrics.worker(options.worker, options.queue.empty() ? "q" : options.queue)),
        dispatcher(options, handler, context, transport, worker_metrics, nullptr) {
    dispatcher.set_duplicate_filter(filter);
    dispatcher.start();
  }
  bool drain(std::chrono::steady_clock::duration within = std::chrono::seconds(10)) {
    return dispatcher.drain(std::chrono::steady_clock::now() + within);
  }

  observability::Metrics metrics;
  WorkerContext context;
  const plugin::HandlerInstance handler;
  const observability::WorkerMetrics worker_metrics;
  Dispatcher dispatcher;
};

inline DispatcherOptions options_for(std::string worker) {
  DispatcherOptions options;
  options.worker = std::move(worker);
  return options;
}

}  // namespace warren::runtime
