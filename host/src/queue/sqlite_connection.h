// A small RAII layer over SQLite for the table queue: one connection (closed on destruction),
// prepared statements that reset themselves, write transactions that always start with
// BEGIN IMMEDIATE, and errors that say which file, which statement and what SQLite answered.
// Not thread-safe: one user at a time (the queue guards its connection with a mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "queue/queue_database_error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace warren::queue {

// Anything that went wrong talking to SQLite. `code` is SQLite's primary result code
// (SQLITE_BUSY, SQLITE_FULL, SQLITE_CORRUPT, ...), 0 when the error is Warren's own.
class SqliteError : public QueueDatabaseError {
 public:
  SqliteError(const std::string& what, int code) : QueueDatabaseError(what), code_(code) {}
  int code() const noexcept { return code_; }
  // The database was busy, full or could not be written for now: worth trying again later.
  bool transient() const noexcept override;

 private:
  int code_;
};

class SqliteConnection;

// A prepared statement. Parameters are 1-based (as in SQL), columns 0-based. step() returns true
// while there is a row; the statement resets itself (and clears its bindings) when done, when it
// throws, and when it is destroyed, so it can be reused at once.
class Statement {
 public:
  Statement(SqliteConnection& connection, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept;

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, std::string_view text);
  Statement& bind_blob(int index, std::string_view bytes);
  Statement& bind_null(int index);
  Statement& bind(int index, const std::optional<std::string>& text);

  bool step();
  // Runs to the end (an INSERT, UPDATE or DELETE); returns the rows it changed.
  int run();
  void reset() noexcept;

  bool is_null(int column) const;
  std::int64_t integer(int column) const;
  std::string text(int column) const;
  // A BLOB or TEXT column as bytes.
  std::string blob(int column) const;

 private:
  SqliteConnection* connection_;
  sqlite3_stmt* statement_ = nullptr;
  std::string sql_;
};

struct SqliteOpenOptions {
  std::filesystem::path path;
  bool create = true;            // create the file when missing
  bool synchronous_full = true;  // PRAGMA synchronous = FULL, else NORMAL
  std::chrono::milliseconds busy_timeout{5000};
  bool read_only = false;
};

class SqliteConnection {
 public:
  // Opens the file in WAL mode with a busy timeout and foreign keys on. Throws SqliteError naming
  // the file and SQLite's reason (not a database, read-only, no such directory...).
  explicit SqliteConnection(const SqliteOpenOptions& options);
  ~SqliteConnection();
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  // Statements without parameters or results (PRAGMAs, DDL, "COMMIT").
  void exec(std::string_view sql);
  // PRAGMA data_version: changes when another connection committed (cheap; no I/O once cached).
  std::int64_t data_version();
  std::int64_t last_insert_rowid() const noexcept;
  int changes() const noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  sqlite3* handle() const noexcept { return db_; }
  // Throws SqliteError for result `code` of `what`, with SQLite's message.
  [[noreturn]] void fail(int code, std::string_view what) const;

 private:
  // SQLite's busy handler: called while another connection holds the lock, `attempt` counting
  // from 0; false gives up (SQLITE_BUSY).
  static int on_busy(void* self, int attempt);

  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
  std::chrono::milliseconds busy_timeout_;
  std::chrono::steady_clock::time_point busy_since_;
};

// A write transaction: BEGIN IMMEDIATE on construction (so the write lock is taken up front and
// the busy handler applies; a deferred transaction that reads then writes would get SQLITE_BUSY
// at once), ROLLBACK on destruction unless commit() ran.
class WriteTransaction {
 public:
  explicit WriteTransaction(SqliteConnection& connection);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  SqliteConnection& connection_;
  bool open_ = true;
};

}  // namespace warren::queue
