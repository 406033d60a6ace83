// bench_ipc_roundtrip WORKER_BINARY PLUGIN [MESSAGES [WINDOW]]: what isolation = "process" costs
// one message, without a broker. Runs a no-op plugin MESSAGES times in this process
// (HandlerInstance, as a thread-isolated worker does) and MESSAGES times in one warren-worker child
// (WorkerProcess::handle, as a process-isolated worker does: the message over the socket, the
// outcome back), in batches of 1000, and prints each side's median µs per message over the
// batches, their difference (the round trip) and this process's CPU µs per message on each side
// (the host's share; the child's is its own). Single-threaded: one message in flight, as in one
// child.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "isolation/worker_process.h"
#include "plugin/handler_instance.h"
#include "plugin/held_plugin_file.h"
#include "process_clock.h"

namespace {

using namespace warren;

// The host's services as a no-op plugin uses them: only the outcome is kept.
class QuietWorker final : public host_abi::WorkerServices {
 public:
  std::string_view worker_name() const noexcept override { return "bench"; }
  void log(LogLevel, std::string_view) noexcept override {}
  const std::string* setting(std::string_view) const noexcept override { return nullptr; }
  host_abi::PluginMetric* metric(MetricType, const std::string&, std::string_view,
                                 std::span<const double>, std::string& error) noexcept override {
    error = "no metrics in this benchmark";
    return nullptr;
  }
  host_abi::PluginMetric* labelled_metric(MetricType, const std::string&, std::string_view,
                                          std::span<const double>, std::span<const std::string>,
                                          std::string& error) noexcept override {
    error = "no metrics in this benchmark";
    return nullptr;
  }
};

class OutcomeOnly final : public host_abi::MessageServices {
 public:
  void log(LogLevel, std::string_view) noexcept override {}
  std::optional<std::string_view> header(std::string_view) const noexcept override {
    return std::nullopt;
  }
  bool stop_requested() const noexcept override { return false; }
  void* scope() const noexcept override { return nullptr; }
  void set_scope(void*, warren_scope_destroy_fn) noexcept override {}
  std::optional<std::string> publish(OutgoingMessage) noexcept override {
    return "no publishing in this benchmark";
  }
  void report(host_abi::ReportedOutcome) noexcept override { ++outcomes; }
  long outcomes = 0;
};

struct Side {
  double median_us_per_message;
  double cpu_us_per_message;
};

// Times MESSAGES calls of HANDLE_ONE in batches of 1000 (after one warm-up batch).
Side time_side(long messages, const std::function<void()>& handle_one) {
  constexpr long kBatch = 1000;
  for (long i = 0; i < kBatch; ++i)
    handle_one();
  std::vector<double> batch_us;
  const std::int64_t cpu_before = bench::cpu_ns();
  for (long done = 0; done < messages; done += kBatch) {
    const std::int64_t start = bench::now_ns();
    for (long i = 0; i < kBatch; ++i)
      handle_one();
    batch_us.push_back(static_cast<double>(bench::now_ns() - start) / 1e3 / kBatch);
  }
  const double cpu_us = static_cast<double>(bench::cpu_ns() - cpu_before) / 1e3;
  std::sort(batch_us.begin(), batch_us.end());
  return {batch_us[batch_us.size() / 2], cpu_us / static_cast<double>(batch_us.size() * kBatch)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_ipc_roundtrip WORKER_BINARY PLUGIN [MESSAGES]\n");
    return 2;
  }
  const long messages = argc > 3 ? std::stol(argv[3]) : 100000;
  const std::size_t window = argc > 4 ? std::stoul(argv[4]) : 1;
  std::string body(256, 'x');  // the consume benchmark's message size
  std::string id = "bench-1";
  warren_message view{};
  view.struct_size = sizeof(view);
  view.body = {body.data(), body.size()};
  view.message_id = {id.data(), id.size()};
  view.attempt = 1;
  const std::vector<std::pair<std::string, std::string>> headers;

  QuietWorker worker;
  OutcomeOnly services;
  plugin::HandlerInstance in_process(plugin::PluginLibrary::load_file(argv[2], ""), worker);
  const Side thread = time_side(messages, [&] { in_process.handle(view, services); });

  isolation::HeldExecutable executable(argv[1]);
  const std::filesystem::path plugin_file = std::filesystem::absolute(argv[2]);
  const plugin::HeldPluginFile held(plugin_file.parent_path(), plugin_file);
  isolation::WorkerProcessOptions options;
  options.worker = "bench";
  options.plugin_path = plugin_file.string();
  options.plugin_fd = held.fd();
  isolation::WorkerProcess child(executable, options, worker);
  child.start();
  const Side process = time_side(messages, [&] {
    if (auto death = child.handle(view, headers, services)) {
      std::fprintf(stderr, "the child died: %s\n", death->reason.c_str());
      std::exit(1);
    }
  });
  // WINDOW in flight: each call sends one and, the window full, waits for the oldest.
  std::deque<isolation::WorkerProcess::Ticket> tickets;
  auto await_oldest = [&] {
    if (child.await(tickets.front()).kind != isolation::WorkerProcess::Awaited::Kind::ran) {
      std::fprintf(stderr, "the child died\n");
      std::exit(1);
    }
    tickets.pop_front();
  };
  const Side windowed = window <= 1 ? Side{} : time_side(messages, [&] {
    if (tickets.size() == window)
      await_oldest();
    tickets.push_back(child.submit(view, headers, services));
  });
  while (!tickets.empty())
    await_oldest();
  child.stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));

  std::printf("| side | median µs/msg | this process's CPU µs/msg |\n|---|---:|---:|\n");
  std::printf("| in process (HandlerInstance::handle) | %.2f | %.2f |\n",
              thread.median_us_per_message, thread.cpu_us_per_message);
  std::printf("| worker process (WorkerProcess::handle) | %.2f | %.2f |\n",
              process.median_us_per_message, process.cpu_us_per_message);
  if (window > 1)
    std::printf("| worker process, window %zu (submit, await) | %.2f | %.2f |\n", window,
                windowed.median_us_per_message, windowed.cpu_us_per_message);
  std::printf("\nround trip: %.2f µs per message (%ld messages a side, batches of 1000)\n",
              process.median_us_per_message - thread.median_us_per_message, messages);
  const long sides = window > 1 ? 3 : 2;
  return services.outcomes == sides * (messages + 1000) ? 0 : 1;
}
