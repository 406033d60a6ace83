// warren::testing::Harness: an in-memory fake of the Warren host for unit-testing handlers.
//
// It hands the handler the host's own warren_host_api table (Warren::host_abi, the same code the
// host links: the same checks of metric names, buckets, publish requests and outcomes) over
// in-memory services, and drives the handler through the same descriptor trampolines the real
// host uses (warren/plugin.h), so a test sees exactly what production would do with an outcome,
// an exception or a refused call. No broker, no threads of its own.
//
//   auto h = warren::testing::Harness::of<OrderEmail>({{"out_dir", dir}}, "emails");
//   warren::testing::TestMessage m;
//   m.body = R"({"event_id": "..."})";
//   m.routing_key = "pedido.registrado";
//   warren::testing::Result r = h.deliver(m);
//   EXPECT_EQ(r.kind, warren::testing::Result::Kind::ack) << r;
//
// Optionally, as the host: use_config() reads the exchanges, queues, bindings and workers of a
// warren.toml (with the host's loader), and publishes are then routed through them (an
// unroutable one fails as in production); deliver_until_settled() runs a message through the
// worker's retry policy; load() takes the plugin from its built .so through WARREN_PLUGIN's
// descriptor, with the host loader's checks; load_isolated() runs it in a `warren-worker` child
// process as isolation = "process" does, so a test sees what a crash of the handler costs.
//
// Thread-safety: deliver() may run on several threads at once on one Harness (the real host runs
// handle() concurrently on one instance; an isolated harness runs one message at a time, as one
// worker process does); the inspection methods return snapshots.
// Standard library only, like the SDK.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "warren/abi.h"
#include "warren/host_abi/reported_outcome.h"
#include "warren/log_level.h"
#include "warren/metrics.h"
#include "warren/outgoing_message.h"
#include "warren/plugin.h"

namespace warren {

// Readable in test failures.
std::ostream& operator<<(std::ostream& out, LogLevel level);
std::ostream& operator<<(std::ostream& out, MetricType type);

}  // namespace warren

namespace warren::testing {

// The worker's [workers.settings] table, values already rendered as strings.
using Settings = std::map<std::string, std::string>;

// One delivery, as the broker would hand it to the host.
struct TestMessage {
  std::string body;
  std::string routing_key;
  std::string exchange;
  std::string message_id;
  std::string content_type;
  std::map<std::string, std::string> headers;
  std::uint32_t attempt = 1;  // 1-based
  bool redelivered = false;
};

// What the host would do with the message after one handle() call.
struct Result {
  enum class Kind { ack, retry, dead_letter };
  // How the handler got there: by returning an Outcome (none), or by throwing (std_exception,
  // permanent, unknown). The host's own vocabulary (warren/host_abi/reported_outcome.h).
  using Error = host_abi::HandlerError;

  Kind kind = Kind::ack;
  // retry only: the delay the handler asked for; std::nullopt means "the worker's policy".
  std::optional<std::chrono::milliseconds> delay;
  // dead_letter: the reason; when the handler threw: the exception's what().
  std::string reason;
  bool threw = false;
  Error error = Error::none;
  // When the handler threw a std::exception: its demangled type, e.g. "warren::PermanentError".
  std::string exception_type;
  // Harness::load_isolated() only: the handler's worker process died running the message, and
  // this is how the host names its death: "SIGSEGV", "SIGABRT", "oom", "timeout", ... (empty when
  // it did not). The message then has no outcome: kind is retry, since the host runs it again in
  // a fresh process (dead-lettering it at max_crashes: deliver_until_settled()).
  std::string crash;
};

std::string_view to_string(Result::Kind kind) noexcept;
std::string_view to_string(Result::Error error) noexcept;
// Readable in test failures: "dead_letter (threw warren::PermanentError: bad json)",
// "crashed: SIGSEGV".
std::ostream& operator<<(std::ostream& out, Result::Kind kind);
std::ostream& operator<<(std::ostream& out, const Result& result);

// A publish the handler asked for and the fake broker confirmed, exactly as requested: the SDK's
// own OutgoingMessage (the real host also fills an empty message_id and propagates the trace
// context; the harness does not).
using PublishedMessage = OutgoingMessage;

// A confirmed publish and the queues it reached, in binding order (with use_config(); without a
// configuration nothing is routed and `queues` is empty).
struct RoutedMessage {
  PublishedMessage message;
  std::vector<std::string> queues;
};

// A worker's retry policy, as [workers.retry] defines it (docs/configuration.md), with the
// host's defaults. Given in code to deliver_until_settled(), or read from the configuration.
struct RetryPolicy {
  enum class Backoff { none, fixed, exponential };
  int max_attempts = 5;
  Backoff backoff = Backoff::exponential;
  std::chrono::milliseconds initial{std::chrono::seconds(1)};
  std::chrono::milliseconds max{std::chrono::minutes(5)};
  double jitter = 0.2;  // the host stretches each delay by up to this fraction, at random
  int immediate = 0;    // attempts run again at once, in process, before broker-delayed ones
};

// One message run through a retry policy until it is settled (Harness::deliver_until_settled).
struct SettledMessage {
  enum class Disposition { acked, dead_lettered, retrying };

  struct Attempt {
    std::uint32_t number = 1;  // msg.attempt(), x-warren-attempt
    Result result;
    // What the host did next: run it again at once (an immediate retry), or after `delay`
    // (a broker-delayed retry); neither when this attempt settled the message.
    bool run_again_now = false;
    std::optional<std::chrono::milliseconds> delay;
  };

  std::vector<Attempt> attempts;  // attempts[0] is attempt 1
  Disposition disposition = Disposition::acked;
  // dead_lettered: the reason the host records (x-warren-error), e.g.
  // "gave up after 5 attempts: std::runtime_error: timeout" or "warren::PermanentError: bad json".
  std::string reason;
  // retrying (the cap on deliveries was reached): the next attempt's number and its delay.
  std::uint32_t next_attempt = 0;
  std::chrono::milliseconds next_delay{0};
};

std::string_view to_string(SettledMessage::Disposition disposition) noexcept;
std::ostream& operator<<(std::ostream& out, SettledMessage::Disposition disposition);
// Readable in test failures: every attempt's result, then the disposition.
std::ostream& operator<<(std::ostream& out, const SettledMessage& settled);

// How Harness::load_isolated() runs the plugin's worker process: the keys of a worker with
// isolation = "process" (docs/configuration.md), with the host's defaults.
struct IsolationOptions {
  std::chrono::milliseconds soft_timeout{0};  // then Context::stop_requested(); 0: never
  std::chrono::milliseconds hard_timeout{0};  // then the process is killed, "timeout"; 0: never
  std::uint64_t memory_max = 0;               // bytes; past it the process dies, "oom"; 0: none
  std::chrono::milliseconds startup_timeout{std::chrono::seconds(10)};  // plugin loaded, init run
  // deliver_until_settled() dead-letters a message whose process died this many times running it
  // (with use_config(), the configuration's max_crashes of this harness's worker wins).
  int max_crashes = 3;
};

// The SDK's LogLevel (warren/log_level.h); handlers log info, warn and error.
using LogLevel = ::warren::LogLevel;

// Every level is recorded, debug and trace included (the harness has no [log] level).
struct LogRecord {
  LogLevel level = LogLevel::info;
  std::string text;
  // The message being handled; empty for worker-level logs (PluginContext).
  std::string message_id;
};

// The SDK's MetricType (warren/metrics.h).
using MetricType = ::warren::MetricType;

// The values recorded into one series of a labelled metric, in order.
struct SeriesRecord {
  std::vector<double> values;

  double sum() const noexcept;
  double last() const noexcept;
};

// A metric the handler created, with every value recorded into it in order (counter: the
// increments; histogram: the observations; gauge: the values set). A labelled metric (SDK 1.2)
// records into `series` instead, by label values in the order of `label_names`; past the host's
// bound of 100 series, into the series whose values are all "__overflow__" (with a warning
// logged once, as the host does).
struct MetricRecord {
  MetricType type = MetricType::counter;
  std::string help;
  std::vector<double> buckets;
  std::vector<double> values;
  std::vector<std::string> label_names;
  std::map<std::vector<std::string>, SeriesRecord> series;

  double sum() const noexcept;
  // The gauge's current value (the last one set), or 0 when nothing was recorded.
  double last() const noexcept;
};

class Harness {
 public:
  // Constructs handler H as a worker named `worker_name` with these settings.
  // Throws std::runtime_error carrying the constructor's reason when it fails.
  template <class H>
  static Harness of(Settings settings = {}, std::string worker_name = "test-worker") {
    static constexpr warren_plugin_descriptor descriptor =
        ::warren::detail::make_descriptor<H>("harness", "0.0.0");
    return Harness(descriptor, std::move(settings), std::move(worker_name));
  }

  // Loads the plugin from its built .so (lib<name>.so, e.g. $<TARGET_FILE:my_plugin>) as the host
  // does: the file and directory checks, dlopen, the ABI handshake of WARREN_PLUGIN's descriptor
  // and its name against the file's, then its constructor. Throws std::runtime_error with the
  // loader's reason, e.g. `"/b/libx.so": refused: it declares the name "y" but was loaded as "x";
  // ...`. The library is closed with the harness, after the handler instance is destroyed.
  static Harness load(const std::string& plugin_file, Settings settings = {},
                      std::string worker_name = "test-worker");

  // Loads the plugin as load() does, but in a `warren-worker` child process, as the host runs a
  // worker with isolation = "process": every deliver() hands the message to the child, whose
  // logs, metrics and publishes reach this harness as an in-process handler's do. A child that
  // dies running a message is named in Result::crash, and the next deliver() starts a fresh one
  // at once (the host waits a restart delay first). The plugin is never loaded in this process.
  // warren-worker is the file $WARREN_WORKER_BINARY names, else the installed one
  // (<prefix>/lib/warren/warren-worker). Throws std::runtime_error when it cannot be found, or
  // when the child does not start: the loader's reason, init's, or its death ("SIGSEGV").
  static Harness load_isolated(const std::string& plugin_file, Settings settings = {},
                               std::string worker_name = "test-worker",
                               IsolationOptions options = {});

  // Drives a descriptor obtained elsewhere, e.g. from a plugin .so's warren_plugin_entry(), of
  // this ABI or an older minor (an ABI 1.0 plugin runs as it does in the host). Throws
  // std::runtime_error when the host would refuse the descriptor (host_abi/descriptor_check.h)
  // or its constructor fails.
  Harness(const warren_plugin_descriptor& descriptor, Settings settings,
          std::string worker_name = "test-worker");
  ~Harness();  // destroys the handler instance
  Harness(Harness&&) noexcept;
  Harness& operator=(Harness&&) noexcept;
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // Runs handle() once and settles the message: the scope the handler attached is destroyed
  // before this returns. Throws std::logic_error if the plugin reports no outcome, more than one,
  // or an invalid one (the real host would count that as a failed attempt of a broken plugin).
  Result deliver(const TestMessage& message);

  // Reads a warren.toml with the host's loader (the errors of `warren check`): from now on
  // publishes are routed through its exchanges, queues and bindings as an in-process broker
  // routes them. A publish to an exchange the file does not declare fails with
  // "NOT_FOUND - no exchange 'x'"; one that reaches no queue with "unroutable: no queue is bound
  // to exchange 'x' for routing key 'k'" (Context::publish throws warren::PublishError). The
  // worker named as this harness's worker, when the file has it, gives deliver_until_settled()
  // its retry policy. Throws std::runtime_error listing the problems of an invalid file.
  void use_config(const std::string& config_file);
  // The same from TOML text; `source_name` names it in errors.
  void use_config_text(std::string_view toml, const std::string& source_name = "harness.toml");
  // The retry policy of the worker named as this harness's worker in the configuration.
  // Throws std::logic_error without a configuration or when it has no such worker.
  RetryPolicy retry_policy() const;

  // Runs `first` through `policy` until it is settled, as the host does: attempt 1, 2, ... (the
  // message's attempt and, after a broker-delayed retry, the x-warren-* retry headers the host
  // adds), with the host's own decision after each attempt and its delays (jitter drawn as 0: the
  // shortest delay the host would wait). Stops acked, dead-lettered, or retrying once
  // `max_deliveries` attempts ran. Throws as deliver() does. With load_isolated(), a death of the
  // worker process is no attempt: the message runs again, same attempt number, in a fresh one,
  // and is dead-lettered when it has died max_crashes times (the host's reason: "crash: SIGSEGV:
  // its worker process died 3 times running this message"); each death is in `attempts`.
  SettledMessage deliver_until_settled(const TestMessage& first, const RetryPolicy& policy,
                                       std::uint32_t max_deliveries = 100);
  // The same under retry_policy(), the configuration's policy for this worker.
  SettledMessage deliver_until_settled(const TestMessage& first,
                                       std::uint32_t max_deliveries = 100);

  // Snapshots of what happened so far, in order.
  std::vector<PublishedMessage> published() const;
  std::vector<RoutedMessage> routed() const;
  // The confirmed publishes that reached `queue` (with use_config()).
  std::vector<PublishedMessage> published_to(std::string_view queue) const;
  std::vector<LogRecord> logs() const;
  // Keyed by the exported name: warren_plugin_<name> (the prefix is added when missing).
  std::map<std::string, MetricRecord> metrics() const;

  // The next publish fails with this reason (Context::publish throws warren::PublishError),
  // whatever the configuration's routing would say. Calls queue up: n calls fail the next n
  // publishes.
  void fail_next_publish(std::string reason);
  // From now on Context::stop_requested() is true, as during the host's shutdown.
  void request_stop() noexcept;
  // Scopes attached by the handler and not yet destroyed (0 between deliveries).
  std::size_t live_scopes() const noexcept;

  // With load_isolated() the plugin lives in the child: only name and version are set (from
  // the child's greeting), and struct_size is 0.
  const warren_plugin_descriptor& descriptor() const noexcept;

  struct State;  // the fake host's services and records (harness.cc)

 private:
  // The crashes that dead-letter a message (load_isolated()): the configuration's max_crashes of
  // this worker, else IsolationOptions::max_crashes.
  int max_crashes() const;
  explicit Harness(std::unique_ptr<State> state);
  // deliver(), also returning the outcome as the plugin reported it (the retry decision's input).
  std::pair<Result, host_abi::ReportedOutcome> deliver_reporting(const TestMessage& message);
  // `library` keeps the plugin's .so loaded while its descriptor and instance are in use.
  Harness(std::shared_ptr<const void> library, const warren_plugin_descriptor& descriptor,
          Settings settings, std::string worker_name);

  std::unique_ptr<State> state_;
};

}  // namespace warren::testing
