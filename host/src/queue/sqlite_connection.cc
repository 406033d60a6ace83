// See sqlite_connection.h.
#include "queue/sqlite_connection.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include "queue/sqlite_api.h"

namespace warren::queue {
namespace {

// Why a database that opened cannot be used, when the cause is the file system: WAL mode writes
// the file and its -wal and -shm files beside it, so both must be writable.
std::string writable_hint(const std::filesystem::path& path, bool read_only) {
  if (read_only)
    return {};
  struct statvfs volume {};
  const auto directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (::statvfs(directory.c_str(), &volume) == 0 && (volume.f_flag & ST_RDONLY) != 0)
    return " (the file system holding it is mounted read-only; the queue needs to write the file "
           "and its -wal and -shm files beside it)";
  if (::access(directory.c_str(), W_OK) != 0 ||
      (std::filesystem::exists(path) && ::access(path.c_str(), W_OK) != 0))
    return " (the file or its directory is not writable by this user; the queue writes the file "
           "and its -wal and -shm files beside it)";
  return {};
}

}  // namespace

bool SqliteError::transient() const noexcept {
  switch (code_ & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
      return true;
    default:
      return false;
  }
}

SqliteConnection::SqliteConnection(const SqliteOpenOptions& options)
    : path_(options.path), busy_timeout_(options.busy_timeout) {
  int flags = SQLITE_OPEN_NOMUTEX;
  if (options.read_only) {
    flags |= SQLITE_OPEN_READONLY;
  } else {
    flags |= SQLITE_OPEN_READWRITE;
    if (options.create)
      flags |= SQLITE_OPEN_CREATE;
  }
  const int rc = sqlite().sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string reason =
        db_ != nullptr ? sqlite().sqlite3_errmsg(db_) : sqlite().sqlite3_errstr(rc);
    sqlite().sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError("cannot open the queue database '" + path_.string() + "': " + reason, rc);
  }
  sqlite().sqlite3_extended_result_codes(db_, 1);
  sqlite().sqlite3_busy_handler(db_, &SqliteConnection::on_busy, this);
  try {
    // Reading the journal mode also makes SQLite read the header: a file that is not a database
    // fails here, at open, rather than at the first claim.
    if (!options.read_only)
      exec("PRAGMA journal_mode = WAL");
    exec(options.synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    exec("PRAGMA foreign_keys = ON");
  } catch (const SqliteError& e) {
    sqlite().sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError("cannot open the queue database '" + path_.string() +
                          "': " + sqlite().sqlite3_errstr(e.code()) +
                          writable_hint(path_, options.read_only),
                      e.code());
  }
}

// Why not sqlite3_busy_timeout: its handler sleeps 1, 2, 5, ... then 100 ms between attempts,
// while a host draining its queue holds the write lock for rounds of a fraction of a millisecond
// with gaps as short between them. A second host polling every 100 ms almost never hits a gap and
// can wait until the first has drained everything (seen: two hosts on one file, one handled all
// 4000 rows). Trying every 100-400 us, for the same total time, finds the gaps.
int SqliteConnection::on_busy(void* self, int attempt) {
  auto& connection = *static_cast<SqliteConnection*>(self);
  if (connection.busy_timeout_.count() <= 0)
    return 0;
  const auto now = std::chrono::steady_clock::now();
  if (attempt == 0)
    connection.busy_since_ = now;
  else if (now - connection.busy_since_ >= connection.busy_timeout_)
    return 0;
  // A spread of sleeps (not one period) so that two waiting hosts do not poll in step.
  ::usleep(static_cast<useconds_t>(100 + (attempt * 97) % 300));
  return 1;
}

SqliteConnection::~SqliteConnection() {
  sqlite().sqlite3_close_v2(db_);
}

void SqliteConnection::fail(int code, std::string_view what) const {
  throw SqliteError(
      std::string(what) + " on '" + path_.string() + "': " + sqlite().sqlite3_errmsg(db_), code);
}

void SqliteConnection::exec(std::string_view sql) {
  const std::string text(sql);
  char* message = nullptr;
  const int rc = sqlite().sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    const std::string reason = message != nullptr ? message : sqlite().sqlite3_errstr(rc);
    sqlite().sqlite3_free(message);
    throw SqliteError(text.substr(0, 60) + " on '" + path_.string() + "': " + reason, rc);
  }
}

std::int64_t SqliteConnection::data_version() {
  Statement version(*this, "PRAGMA data_version");
  version.step();
  const std::int64_t value = version.integer(0);
  version.reset();
  return value;
}

std::int64_t SqliteConnection::last_insert_rowid() const noexcept {
  return sqlite().sqlite3_last_insert_rowid(db_);
}

int SqliteConnection::changes() const noexcept {
  return sqlite().sqlite3_changes(db_);
}

Statement::Statement(SqliteConnection& connection, std::string_view sql)
    : connection_(&connection), sql_(sql) {
  const int rc =
      sqlite().sqlite3_prepare_v3(connection.handle(), sql_.data(), static_cast<int>(sql_.size()),
                                  SQLITE_PREPARE_PERSISTENT, &statement_, nullptr);
  if (rc != SQLITE_OK)
    connection.fail(rc, "preparing " + sql_.substr(0, 60));
}

Statement::~Statement() {
  sqlite().sqlite3_finalize(statement_);
}

Statement::Statement(Statement&& other) noexcept
    : connection_(other.connection_), statement_(other.statement_), sql_(std::move(other.sql_)) {
  other.statement_ = nullptr;
}

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite().sqlite3_bind_int64(statement_, index, value);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  sqlite().sqlite3_bind_text64(statement_, index, text.data(), text.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  sqlite().sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind_null(int index) {
  sqlite().sqlite3_bind_null(statement_, index);
  return *this;
}

Statement& Statement::bind(int index, const std::optional<std::string>& text) {
  return text ? bind(index, std::string_view(*text)) : bind_null(index);
}

bool Statement::step() {
  const int rc = sqlite().sqlite3_step(statement_);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE) {
    reset();
    return false;
  }
  reset();
  connection_->fail(rc, sql_.substr(0, 60));
}

int Statement::run() {
  while (step()) {
  }
  return connection_->changes();
}

void Statement::reset() noexcept {
  sqlite().sqlite3_reset(statement_);
  sqlite().sqlite3_clear_bindings(statement_);
}

bool Statement::is_null(int column) const {
  return sqlite().sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

std::int64_t Statement::integer(int column) const {
  return sqlite().sqlite3_column_int64(statement_, column);
}

std::string Statement::text(int column) const {
  const auto* data = sqlite().sqlite3_column_text(statement_, column);
  const int size = sqlite().sqlite3_column_bytes(statement_, column);
  return data == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(data), size);
}

std::string Statement::blob(int column) const {
  const void* data = sqlite().sqlite3_column_blob(statement_, column);
  const int size = sqlite().sqlite3_column_bytes(statement_, column);
  return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size);
}

WriteTransaction::WriteTransaction(SqliteConnection& connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE");
}

WriteTransaction::~WriteTransaction() {
  if (open_) {
    try {
      connection_.exec("ROLLBACK");
    } catch (...) {
      // A failed COMMIT can have rolled back already; nothing more to undo.
    }
  }
}

void WriteTransaction::commit() {
  connection_.exec("COMMIT");
  open_ = false;
}

}  // namespace warren::queue
