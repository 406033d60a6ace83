// The typed, validated form of warren.toml. Everything the host does is driven from here; the
// loader (config_loader.h) guarantees that every field holds an allowed value and that names
// refer to things that exist, so the rest of the host never re-validates.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace warren::config {

using Duration = std::chrono::milliseconds;

// Where a value came from, for messages that point the user at the file.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

// An AMQP table value as written in TOML (`arguments = { "x-max-priority" = 10 }`).
using ArgumentValue = std::variant<bool, std::int64_t, double, std::string>;
using Arguments = std::map<std::string, ArgumentValue>;

struct HostConfig {
  std::string name;                  // default: the machine's hostname
  std::filesystem::path plugin_dir;  // absolute; default /usr/lib/warren/plugins
  Duration shutdown_timeout = std::chrono::seconds(30);
  // Where the host keeps its crash journal and crash ledger (runtime/crash_watch.h). Default:
  // systemd's $STATE_DIRECTORY when set, else /var/lib/warren. Never created by the host.
  std::filesystem::path state_dir;
  // Where `warren run` writes its process id (removed at exit), for `warren reload`. Empty: none.
  std::filesystem::path pid_file;
};

struct LogConfig {
  enum class Format { text, json };
  std::string level = "info";  // trace|debug|info|warn|error|critical|off
  Format format = Format::text;
};

struct MetricsConfig {
  bool enabled = true;
  std::string listen = "127.0.0.1:9464";  // host:port
  std::string user;                       // basic auth when set, with password_file
  std::filesystem::path password_file;
  std::string password;  // read from password_file at load; never logged
};

struct TlsConfig {
  std::filesystem::path ca_file;
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
};

// [broker.sqlite]: the broker-less table queue in one SQLite file.
struct SqliteQueueConfig {
  std::filesystem::path path;  // absolute; created when missing
  // FULL: a commit survives a power loss. NORMAL: faster; the last commits can be lost on power
  // loss (never on a crash of the process).
  bool synchronous_full = true;
  Duration poll_interval = std::chrono::milliseconds(200);  // for other processes' inserts
  Duration lease = std::chrono::minutes(5);                 // a claimed row's lease
  Duration retention = std::chrono::hours(1);               // done rows are kept this long
};

// [broker.postgres]: the table queue in a PostgreSQL database, for several hosts on one database.
struct PostgresQueueConfig {
  std::string dsn;  // from dsn or dsn_file; never logged (it may hold a password)
  // LISTEN wakes the hosts at once; polling is the fallback (notifications sent while a host was
  // disconnected are lost).
  Duration poll_interval = std::chrono::seconds(1);
  Duration lease = std::chrono::minutes(5);    // a claimed row's lease
  Duration retention = std::chrono::hours(1);  // done rows are kept this long
  std::string schema = "public";               // where warren_queue and its functions live
};

struct BrokerConfig {
  enum class Transport { rabbitmq, memory, sqlite, postgres };
  Transport transport = Transport::rabbitmq;
  // Tried in turn for failover; from `uri` or `hosts`. amqp:// or amqps://.
  // The loader takes any password out of them (it is in `password`): they are safe to log.
  std::vector<std::string> uris;
  std::string vhost;  // overrides the uri's vhost when set
  std::string user;   // overrides the uri's user when set
  std::filesystem::path password_file;
  // Resolved at load from WARREN_BROKER_PASSWORD, password_file or the uri; never logged.
  std::string password;
  bool password_in_uri = false;  // the loader warns about it
  Duration heartbeat = std::chrono::seconds(30);
  Duration connect_timeout = std::chrono::seconds(10);
  Duration publish_timeout = std::chrono::seconds(10);
  Duration reconnect_initial = std::chrono::milliseconds(500);
  // Short enough that consumers are back within seconds of a broker restart.
  Duration reconnect_max = std::chrono::seconds(10);
  // The broker's own consumer_timeout (RabbitMQ's default: 30 minutes), which AMQP does not tell
  // a client: only compared with each worker's prefetch x max_handler_time at start
  // (consumer_timeout_warnings.h).
  Duration consumer_timeout = std::chrono::minutes(30);
  TlsConfig tls;
  SqliteQueueConfig sqlite;
  PostgresQueueConfig postgres;
};

enum class ExchangeType { direct, fanout, topic, headers };

struct ExchangeConfig {
  std::string name;
  ExchangeType type = ExchangeType::topic;
  bool durable = true;
  bool auto_delete = false;
  Arguments arguments;
  SourceLocation where;
};

struct BindingConfig {
  std::string exchange;
  std::string routing_key;
  Arguments arguments;  // for headers exchanges (x-match and the headers to match)
};

enum class QueueType { classic, quorum };

struct QueueConfig {
  // The name workers use. With server_named, the broker picks the real name at each connect.
  std::string name;
  QueueType type = QueueType::quorum;
  bool durable = true;
  bool exclusive = false;
  bool auto_delete = false;
  bool server_named = false;
  std::string dead_letter_exchange;
  std::string dead_letter_routing_key;
  std::optional<std::int64_t> delivery_limit;  // quorum: 20 when unset
  std::string dead_letter_strategy;            // at-most-once|at-least-once
  std::optional<Duration> message_ttl;
  std::optional<std::int64_t> max_length;
  std::string overflow;  // drop-head|reject-publish|reject-publish-dlx
  bool allow_message_loss = false;
  std::vector<BindingConfig> bindings;
  Arguments arguments;  // further x-arguments passed as they are
  SourceLocation where;
};

struct RetryPolicy {
  enum class Backoff { none, fixed, exponential };
  int max_attempts = 5;
  Backoff backoff = Backoff::exponential;
  Duration initial = std::chrono::seconds(1);
  Duration max = std::chrono::minutes(5);
  double jitter = 0.2;  // 0..1: the delay is stretched by up to this fraction, never shortened
  int immediate = 0;    // in-process retries before broker-delayed ones
};

struct IdempotencyConfig {
  std::string store = "postgres";
  std::string dsn;  // from dsn or dsn_file
  Duration retention = std::chrono::hours(24 * 7);
};

struct WorkerConfig {
  std::string name;
  std::string plugin;  // loads lib<plugin>.so from host.plugin_dir
  std::string queue;   // a [[queues]] name, or a queue managed elsewhere (then only checked)
  int prefetch = 20;
  int concurrency = 1;
  RetryPolicy retry;
  std::map<std::string, std::string> settings;  // scalars rendered as strings
  std::string dead_letter_exchange;             // default: the queue's dead_letter_exchange
  std::string dead_letter_queue;  // declared and bound to the dead-letter exchange when set
  // Without a dead-letter exchange (the worker's or its queue's), what the worker dead-letters is
  // rejected: dropped, unless the queue has one on the broker. RabbitMQ only; without it (nor the
  // queue's allow_message_loss) such a worker is refused.
  bool allow_message_loss = false;
  std::optional<IdempotencyConfig> idempotency;
  // Where the handler runs (issue 14): in the host's threads (thread, `concurrency` of them), or
  // in `processes` warren-worker child processes, one message at a time each, so that a crash,
  // hang or leak of the plugin costs a child and never the host.
  enum class Isolation { thread, process };
  Isolation isolation = Isolation::thread;
  int processes = 1;
  // isolation = "process" only (0: none). The handler is asked to stop (Context::stop_requested)
  // after soft_timeout; its child is killed after hard_timeout ("timeout", a crash).
  Duration soft_timeout{0};
  Duration hard_timeout{0};
  // A child that is not ready (plugin loaded, init run) this long after its start has failed.
  Duration startup_timeout = std::chrono::seconds(10);
  // The most memory a child may use, in bytes (0: no limit); past it, "oom".
  std::uint64_t memory_max = 0;
  // A message that was inside this worker's handler when the host died this many times is
  // dead-lettered instead of run again (crash accounting, runtime/crash_watch.h); with isolation
  // = "process", when its child died this many times.
  int max_crashes = 3;
  // Series per labelled plugin metric (PluginContext::counter with label names); past it, the
  // "__overflow__" series.
  int metric_series_limit = 100;
  // The longest one handler call is expected to take; not enforced. Prefetched deliveries wait
  // for their handler behind the others, unacked: the start-up warning of
  // consumer_timeout_warnings.h compares that wait with [broker] consumer_timeout. Unset: no check.
  std::optional<Duration> max_handler_time;
  SourceLocation where;
};

struct OutboxConfig {
  // postgres: a relay from a PostgreSQL table to RabbitMQ. sqlite: the warren_outbox table of the
  // SQLite queue's own file, routed into the queue in one transaction (transport = "sqlite").
  enum class Store { postgres, sqlite };
  std::string name;
  Store store = Store::postgres;
  std::string dsn;       // from dsn or dsn_file
  std::string exchange;  // default exchange for rows that name none
  int batch = 100;
  Duration poll_interval = std::chrono::seconds(1);
  int max_attempts = 10;
  Duration backoff_initial = std::chrono::seconds(1);
  Duration backoff_max = std::chrono::minutes(5);
  // Sent rows older than this are deleted by the relay (in chunks), so the table stays bounded.
  Duration retention = std::chrono::hours(24 * 7);
  SourceLocation where;
};

struct Config {
  std::filesystem::path file;  // the file this was loaded from
  HostConfig host;
  LogConfig log;
  MetricsConfig metrics;
  BrokerConfig broker;
  std::vector<ExchangeConfig> exchanges;
  std::vector<QueueConfig> queues;
  std::vector<WorkerConfig> workers;
  std::vector<OutboxConfig> outboxes;

  const QueueConfig* find_queue(std::string_view name) const;
  const ExchangeConfig* find_exchange(std::string_view name) const;
  const WorkerConfig* find_worker(std::string_view name) const;
};

}  // namespace warren::config
