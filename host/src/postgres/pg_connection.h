// A small RAII layer over libpq for the outbox relay, the inbox store and `warren outbox`: one
// connection (PQfinish on destruction), results that clear themselves, and errors that say which
// server, which statement and what PostgreSQL answered. Not thread-safe: one user at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "postgres/libpq_api.h"

namespace warren::postgres {

// Anything that went wrong talking to PostgreSQL. `sqlstate` is empty when the connection itself
// failed (no server answer); `connection_lost` tells the caller to reconnect.
class PgError : public std::runtime_error {
 public:
  PgError(const std::string& what, std::string sqlstate, bool connection_lost)
      : std::runtime_error(what),
        sqlstate_(std::move(sqlstate)),
        connection_lost_(connection_lost) {}
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  bool connection_lost() const noexcept { return connection_lost_; }
  // 42P01: the outbox or inbox table does not exist (run `warren outbox init`).
  bool undefined_table() const noexcept { return sqlstate_ == "42P01"; }

 private:
  std::string sqlstate_;
  bool connection_lost_;
};

// A query result; rows and columns by index. Text columns come back as they are; with binary
// results (exec_params(..., binary_results = true)) bytea is raw and integers are big-endian.
class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result, &clear) {}
  int rows() const noexcept { return libpq().PQntuples(result_.get()); }
  bool is_null(int row, int column) const noexcept {
    return libpq().PQgetisnull(result_.get(), row, column) != 0;
  }
  std::string_view value(int row, int column) const noexcept {
    return {libpq().PQgetvalue(result_.get(), row, column),
            static_cast<std::size_t>(libpq().PQgetlength(result_.get(), row, column))};
  }
  std::string text(int row, int column) const { return std::string(value(row, column)); }
  // A binary-format int4 / int8 column.
  std::int32_t binary_int32(int row, int column) const;
  std::int64_t binary_int64(int row, int column) const;
  // Rows an INSERT/UPDATE/DELETE touched.
  long affected_rows() const;
  // The command tag: "COMMIT", "ROLLBACK", "UPDATE 3"...
  std::string command_status() const { return libpq().PQcmdStatus(result_.get()); }

 private:
  static void clear(PGresult* result) noexcept { libpq().PQclear(result); }
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
};

struct PgConnectOptions {
  std::string dsn;                           // a conninfo string or a postgresql:// URI
  std::string application_name;              // shows in pg_stat_activity; the dsn's own wins
  std::chrono::seconds connect_timeout{10};  // the dsn's own wins
};

class PgConnection {
 public:
  // Connects (blocking, bounded by connect_timeout) with TCP keepalives on, so a dead server is
  // noticed. Throws PgError naming the server (never the password) and libpq's reason.
  explicit PgConnection(const PgConnectOptions& options);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // One or more statements without parameters (e.g. "BEGIN", a whole schema file).
  PgResult exec(const std::string& sql);
  // One statement with text parameters (std::nullopt: SQL NULL).
  PgResult exec_params(const std::string& sql,
                       const std::vector<std::optional<std::string>>& params,
                       bool binary_results = false);

  // A named prepared statement on this connection (parsed and planned once), and its execution
  // with text parameters. Names are the caller's; a reconnect needs them prepared again.
  void prepare(const std::string& name, const std::string& sql);
  PgResult exec_prepared(const std::string& name,
                         const std::vector<std::optional<std::string>>& params,
                         bool binary_results = false);

  bool ok() const noexcept { return libpq().PQstatus(conn_) == CONNECTION_OK; }
  // True while a transaction is open (or failed and not rolled back yet).
  bool in_transaction() const noexcept;
  // Rolls back an open transaction; never throws (a dead connection is left for the caller).
  void rollback_quietly() noexcept;

  int socket() const noexcept { return libpq().PQsocket(conn_); }
  // Reads what the server sent (after poll() said readable); throws PgError when the connection
  // broke. Then take_notifications() returns the NOTIFY channels that arrived, oldest first.
  void consume_input();
  std::vector<std::string> take_notifications();
  // The same with each notification's payload (warren_queue's: the queue's name).
  struct Notification {
    std::string channel;
    std::string payload;
  };
  std::vector<Notification> take_notifications_with_payloads();

  // "host=... port=... dbname=... user=...": for messages; never contains the password.
  const std::string& describe() const noexcept { return description_; }

 private:
  PgResult check(PGresult* result, std::string_view what);

  PGconn* conn_ = nullptr;
  std::string description_;
};

// host/port/dbname/user of a conninfo or URI (or the database name libpq takes a plain word
// for), for messages: the password is left out. When the string cannot be parsed, says so with
// libpq's reason, minus the parts of the string that reason would quote (they may be secret).
std::string describe_dsn(const std::string& dsn);

}  // namespace warren::postgres
