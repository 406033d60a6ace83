// Loading of [broker]: transport, URIs, credentials, timeouts and TLS files. The password is
// resolved here, once: WARREN_BROKER_PASSWORD, else password_file, else the URI's own.
#include <algorithm>
#include <chrono>
#include <string_view>
#include <variant>

#include "config/amqp_uri.h"
#include "config/config_files.h"
#include "config/duration.h"
#include "config/env_expansion.h"
#include "config/loader_sections.h"
#include "config/rabbitmq_only_keys.h"

namespace warren::config {
namespace {

constexpr const char* kPasswordVariable = "WARREN_BROKER_PASSWORD";

struct UriPasswords {
  bool any_tls = false;
  std::optional<std::string> password;  // the first URI password found
};

// Checks one URI node, stores it without its password, and notes its password.
void read_uri(TableReader& table, const toml::node& node, const std::string& key,
              BrokerConfig& broker, UriPasswords& found) {
  ProblemList& problems = table.problems();
  const auto* text = node.as_string();
  if (text == nullptr) {
    problems.add(node.source(), key,
                 "must be a string " + std::string(kAmqpUriSyntax) + ", got " +
                     std::string(describe_type(node.type())));
    return;
  }
  std::string why;
  std::optional<AmqpUri> uri = parse_amqp_uri(text->get(), why);
  if (!uri) {
    // Never quote the URI: it may hold a password.
    problems.add(node.source(), key, "must be " + std::string(kAmqpUriSyntax) + ": " + why);
    return;
  }
  found.any_tls = found.any_tls || uri->tls;
  if (uri->password) {
    if (found.password && *found.password != *uri->password) {
      problems.add(node.source(), key,
                   "holds a different password than an earlier broker URI; one password is "
                   "used for all hosts: put it in password_file or " +
                       std::string(kPasswordVariable));
    } else {
      found.password = uri->password;
    }
    broker.password_in_uri = true;
  }
  broker.uris.push_back(std::move(uri->without_password));
}

// `uri_required`: false when the transport needs none, or is itself refused.
void read_uris(TableReader& table, bool uri_required, BrokerConfig& broker, UriPasswords& found) {
  const toml::node* single = table.find("uri");
  const toml::array* several = table.read_array("hosts");
  if (single != nullptr && table.find("hosts") != nullptr) {
    table.report("hosts", "set either uri or hosts, not both");
    return;
  }
  if (single != nullptr) {
    read_uri(table, *single, table.path_of("uri"), broker, found);
  } else if (several != nullptr) {
    if (several->empty()) {
      table.report("hosts", "must list at least one URI " + std::string(kAmqpUriSyntax));
    }
    for (std::size_t index = 0; index < several->size(); ++index) {
      read_uri(table, (*several)[index], join_index(table.path_of("hosts"), index), broker, found);
    }
  } else if (uri_required && table.find("hosts") == nullptr) {
    table.report("uri",
                 "missing required key: set uri = \"amqp://user@host:5672/\" (or hosts = [...] "
                 "for failover), or transport = \"memory\"");
  }
}

void read_timeouts(TableReader& table, BrokerConfig& broker) {
  using std::chrono::seconds;
  if (table.read_duration("heartbeat", broker.heartbeat) && broker.heartbeat != Duration::zero()) {
    if (broker.heartbeat < seconds(1) || broker.heartbeat % seconds(1) != Duration::zero() ||
        broker.heartbeat > seconds(65535)) {
      table.report("heartbeat",
                   "must be \"0s\" (disabled) or a whole number of seconds from 1s to 65535s "
                   "(AMQP negotiates it in seconds), got " +
                       in_quotes(format_duration(broker.heartbeat)));
    }
  }
  table.read_duration("connect_timeout", broker.connect_timeout, Duration(1));
  table.read_duration("publish_timeout", broker.publish_timeout, Duration(1));
  table.read_duration("reconnect_initial", broker.reconnect_initial, Duration(1));
  if (table.read_duration("reconnect_max", broker.reconnect_max, Duration(1)) &&
      broker.reconnect_max < broker.reconnect_initial) {
    table.report("reconnect_max", "must be at least reconnect_initial (" +
                                      format_duration(broker.reconnect_initial) + "), got " +
                                      in_quotes(format_duration(broker.reconnect_max)));
  }
  table.read_duration("consumer_timeout", broker.consumer_timeout, Duration(1));
}

void read_tls(TableReader& table, const LoadContext& context, BrokerConfig& broker,
              bool any_tls_uri) {
  TlsConfig& tls = broker.tls;
  const bool has_ca = table.read_path("ca_file", tls.ca_file);
  const bool has_cert = table.read_path("cert_file", tls.cert_file);
  const bool has_key = table.read_path("key_file", tls.key_file);
  for (std::filesystem::path* file : {&tls.ca_file, &tls.cert_file, &tls.key_file}) {
    if (!file->empty()) {
      *file = context.resolve(*file);
    }
  }
  // The client key is a secret like a password file: only OpenSSL reads it, at connect time, but
  // its permissions are checked here, at load.
  if (has_key)
    check_secret_file(table, "key_file", tls.key_file);
  if (has_cert && !has_key) {
    table.report("cert_file", "a client certificate needs its key: set key_file too");
  } else if (has_key && !has_cert) {
    table.report("key_file", "a client key needs its certificate: set cert_file too");
  }
  if ((has_ca || has_cert || has_key) && !any_tls_uri && !broker.uris.empty()) {
    table.report(has_ca     ? "ca_file"
                 : has_cert ? "cert_file"
                            : "key_file",
                 "TLS files are used only with amqps:// URIs, and no broker URI is amqps://");
  }
}

void resolve_password(TableReader& table, const LoadContext& context, BrokerConfig& broker,
                      const UriPasswords& found) {
  const bool has_password_file = table.read_path("password_file", broker.password_file);
  if (has_password_file) {
    broker.password_file = context.resolve(broker.password_file);
  }
  if (const char* from_environment = context.environment(kPasswordVariable);
      from_environment != nullptr && *from_environment != '\0') {
    broker.password = from_environment;
  } else if (has_password_file) {
    read_secret_file(table, "password_file", broker.password_file, broker.password);
  } else if (found.password) {
    broker.password = *found.password;
  }
}

// [broker.sqlite]. `path` takes ${VAR:-default} (the state directory differs per machine) and
// resolves against the config file's directory.
void read_sqlite(TableReader& table, const LoadContext& context, SqliteQueueConfig& sqlite) {
  std::string path;
  if (table.require("path", "the queue database file, created when missing") &&
      table.read_non_empty_string("path", path)) {
    auto expanded =
        expand_environment(path, [&](const char* name) { return context.environment(name); });
    if (const auto* error = std::get_if<ExpansionError>(&expanded)) {
      table.report("path", error->message);
    } else {
      sqlite.path = context.resolve(std::get<std::string>(expanded));
    }
  }
  std::string synchronous = "full";
  if (table.read_one_of("synchronous", synchronous, {"full", "normal"}))
    sqlite.synchronous_full = synchronous == "full";
  table.read_duration("poll_interval", sqlite.poll_interval, Duration(1));
  if (table.read_duration("lease", sqlite.lease, Duration(1)) &&
      sqlite.lease < std::chrono::seconds(1)) {
    table.report("lease", "must be at least 1s (the heartbeat extends it every lease / 3), got " +
                              in_quotes(format_duration(sqlite.lease)));
  }
  table.read_duration("retention", sqlite.retention);
}

// A schema name goes into SQL (SET search_path, CREATE SCHEMA) without quoting: keep it plain.
bool is_plain_identifier(const std::string& name) {
  if (name.empty() || name.size() > 63 || (name[0] >= '0' && name[0] <= '9'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// [broker.postgres]: dsn or dsn_file (never both; the file is read like a password file), and
// the same lease, retention and poll settings as SQLite's.
void read_postgres(TableReader& table, const LoadContext& context, PostgresQueueConfig& postgres) {
  const bool has_dsn = table.find("dsn") != nullptr;
  const bool has_dsn_file = table.find("dsn_file") != nullptr;
  if (has_dsn && has_dsn_file) {
    table.report("dsn_file", "set either dsn or dsn_file, not both");
  } else if (!has_dsn && !has_dsn_file) {
    table.require("dsn", "set dsn or dsn_file (a file holding the PostgreSQL connection string)");
  }
  table.read_non_empty_string("dsn", postgres.dsn);
  std::filesystem::path dsn_file;
  if (table.read_path("dsn_file", dsn_file) && !has_dsn)
    read_secret_file(table, "dsn_file", context.resolve(dsn_file), postgres.dsn);
  table.read_duration("poll_interval", postgres.poll_interval, Duration(1));
  if (table.read_duration("lease", postgres.lease, Duration(1)) &&
      postgres.lease < std::chrono::seconds(1)) {
    table.report("lease", "must be at least 1s (the heartbeat extends it every lease / 3), got " +
                              in_quotes(format_duration(postgres.lease)));
  }
  table.read_duration("retention", postgres.retention);
  if (table.read_non_empty_string("schema", postgres.schema) &&
      !is_plain_identifier(postgres.schema)) {
    table.report("schema",
                 "must be a plain SQL identifier (lower-case letters, digits and _, "
                 "not starting with a digit), got " +
                     in_quotes(postgres.schema));
  }
}

// The section a table queue reads its settings from; the other one is refused.
void read_table_queue(TableReader& table, const LoadContext& context, BrokerConfig& broker) {
  const bool sqlite = broker.transport == BrokerConfig::Transport::sqlite;
  const char* mine = sqlite ? "sqlite" : "postgres";
  const char* other = sqlite ? "postgres" : "sqlite";
  const bool read =
      sqlite ? read_sub_table(table, mine,
                              [&](TableReader& sub) { read_sqlite(sub, context, broker.sqlite); })
             : read_sub_table(table, mine, [&](TableReader& sub) {
                 read_postgres(sub, context, broker.postgres);
               });
  if (!read && table.find(mine) == nullptr) {
    table.report(mine, sqlite ? "missing [broker.sqlite] section: transport = \"sqlite\" needs at "
                                "least path = \"/var/lib/warren/queue.db\""
                              : "missing [broker.postgres] section: transport = \"postgres\" "
                                "needs at least dsn = \"postgresql://warren@db/app\"");
  }
  if (table.find(other) != nullptr)
    table.report(other, std::string("is used only with transport = \"") + other + "\"");
}

}  // namespace

void load_broker_section(TableReader& root, const LoadContext& context, Config& config) {
  BrokerConfig& broker = config.broker;
  const bool present = read_sub_table(root, "broker", [&](TableReader& table) {
    const bool transport_valid =
        table.find("transport") == nullptr ||
        table.read_enum<BrokerConfig::Transport>("transport", broker.transport,
                                                 {{"rabbitmq", BrokerConfig::Transport::rabbitmq},
                                                  {"memory", BrokerConfig::Transport::memory},
                                                  {"sqlite", BrokerConfig::Transport::sqlite},
                                                  {"postgres", BrokerConfig::Transport::postgres}});
    if (transport_valid && is_table_queue(broker)) {
      refuse_rabbitmq_only_keys(table,
                                {"uri", "hosts", "vhost", "user", "password_file", "heartbeat",
                                 "connect_timeout", "reconnect_initial", "reconnect_max",
                                 "consumer_timeout", "ca_file", "cert_file", "key_file"},
                                broker);
      read_table_queue(table, context, broker);
      // How long a publish waits for the database's write lock (SQLite's busy timeout), or for a
      // PostgreSQL connection.
      table.read_duration("publish_timeout", broker.publish_timeout, Duration(1));
      return;
    }
    for (const char* section : {"sqlite", "postgres"}) {
      if (table.find(section) != nullptr)
        table.report(section, std::string("is used only with transport = \"") + section + "\"");
    }
    UriPasswords found;
    read_uris(table, transport_valid && broker.transport == BrokerConfig::Transport::rabbitmq,
              broker, found);
    table.read_non_empty_string("vhost", broker.vhost);
    table.read_non_empty_string("user", broker.user);
    resolve_password(table, context, broker, found);
    read_timeouts(table, broker);
    read_tls(table, context, broker, found.any_tls);
  });
  if (!present && root.find("broker") == nullptr &&
      broker.transport == BrokerConfig::Transport::rabbitmq) {
    context.problems.add_unlocated("broker",
                                   "missing [broker] section: set broker.uri (or broker.hosts), or "
                                   "broker.transport = \"memory\" for the in-process transport");
  }
}

}  // namespace warren::config
