// One worker's dispatcher: takes deliveries from the transport, runs the plugin's handler on
// `concurrency` threads, turns what the handler did into a settlement (retry_decision.h) and
// hands it back to the transport. Nothing a handler does, throws or returns escapes: the worker
// and the host keep going.
//
// In-flight deliveries are bounded by the transport (prefetch per channel incarnation), not by
// the inbox: after a reconnect the old incarnation's deliveries still wait in the inbox beside a
// full prefetch of new ones, and a deliver() that blocked would stall the broker's I/O thread (no
// heartbeats, no acks) until a handler finished. So deliver() never blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/config.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "plugin/handler_instance.h"
#include "runtime/bounded_queue.h"
#include "runtime/transport.h"
#include "runtime/worker_context.h"

namespace warren::runtime {

struct DispatcherOptions {
  std::string worker;
  std::string queue;
  std::uint16_t prefetch = 20;
  int concurrency = 1;
  config::RetryPolicy retry;
};

// Idempotent consumers: checked before the handler runs, and told about a message the handler
// acked just before the ack goes to the broker (so a crash in between redelivers a message that
// is then recognised, never one that was processed but not recorded). Both may throw: a failed
// check runs the handler anyway (at-least-once), a failed record still acks.
class DuplicateFilter {
 public:
  virtual ~DuplicateFilter() = default;
  // True when this worker already processed this message id.
  virtual bool seen(const InboundMessage& message) = 0;
  virtual void remember(const InboundMessage& message) = 0;
};

class Dispatcher final : public DeliverySink {
 public:
  Dispatcher(DispatcherOptions options, const plugin::HandlerInstance& handler,
             WorkerContext& worker, Publisher* publisher, observability::WorkerMetrics metrics,
             observability::Health* health);
  ~Dispatcher() override;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void set_duplicate_filter(DuplicateFilter* filter) { duplicate_filter_ = filter; }

  void start();
  // DeliverySink: queues the delivery; after drain() began, hands it straight back (requeue).
  void deliver(std::unique_ptr<Delivery> delivery) override;

  // Context::stop_requested() turns true for running handlers.
  void request_stop() noexcept { stop_requested_.store(true); }
  // Stops taking deliveries, requeues those not started, and waits until running handlers have
  // settled or `deadline` passes. True when everything settled.
  bool drain(std::chrono::steady_clock::time_point deadline);

  std::size_t in_flight() const noexcept { return in_flight_.load(); }
  const DispatcherOptions& options() const noexcept { return options_; }

 private:
  void run_thread(std::shared_ptr<observability::LoopHeartbeat> heartbeat);
  void process(std::unique_ptr<Delivery> delivery);
  // trace_id: for the log line if settling fails (empty: read from the message's headers).
  void settle(Delivery& delivery, const Settlement& settlement,
              std::string_view trace_id = {}) noexcept;
  void count_exception(std::uint32_t error_kind) noexcept;
  bool already_processed(const InboundMessage& message, std::string_view trace_id) noexcept;
  void remember_processed(const InboundMessage& message, std::string_view trace_id) noexcept;

  const DispatcherOptions options_;
  const plugin::HandlerInstance& handler_;
  WorkerContext& worker_;
  Publisher* publisher_;
  observability::WorkerMetrics metrics_;
  observability::Health* health_;
  DuplicateFilter* duplicate_filter_ = nullptr;

  BoundedQueue<std::unique_ptr<Delivery>> inbox_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::size_t> in_flight_{0};

  std::mutex exit_mutex_;
  std::condition_variable exit_cv_;
  int running_threads_ = 0;
};

}  // namespace warren::runtime
