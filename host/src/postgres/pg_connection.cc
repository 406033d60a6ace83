// See pg_connection.h.
#include "postgres/pg_connection.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>

#include "observability/log.h"

namespace warren::postgres {
namespace {

std::string first_line(const char* message) {
  std::string text = message == nullptr ? "" : message;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

// The SQL of a statement, shortened for an error message.
std::string statement_summary(std::string_view sql) {
  std::string summary;
  bool last_space = true;
  for (char c : sql) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space && last_space)
      continue;
    summary.push_back(space ? ' ' : c);
    last_space = space;
    if (summary.size() >= 80) {
      summary += "...";
      break;
    }
  }
  return summary;
}

// libpq quotes the offending part of a connection string it cannot parse, and that part can be
// the password or the whole URI with it ("invalid percent-encoded token: "pa%zz"", "... in URI:
// "postgresql://u:secret@[::1/db""). Keeps libpq's explanation, drops each quoted text longer
// than one character (a lone quoted "=" or "]" says what was expected and stays).
std::string without_quoted_values(std::string_view message) {
  std::string out;
  for (;;) {
    const std::size_t open = message.find('"');
    if (open == std::string_view::npos)
      return out.append(message);
    out.append(message.substr(0, open));
    const std::size_t close = message.find('"', open + 1);
    if (close == std::string_view::npos)
      return out += "\"...\"";  // an unmatched quote: what follows may be a value too
    const std::string_view quoted = message.substr(open, close - open + 1);
    out += quoted.size() <= 3 ? std::string(quoted) : std::string("\"...\"");
    message.remove_prefix(close + 1);
  }
}

// What libpq (PQconnectdbParams with expand_dbname) reads as a connection string: anything with
// a '=' or a postgresql:// or postgres:// prefix. Anything else is a database name.
bool is_connection_string(std::string_view dsn) {
  return dsn.find('=') != std::string_view::npos || dsn.starts_with("postgresql://") ||
         dsn.starts_with("postgres://");
}

// Why libpq cannot parse `dsn`, without any value from it; std::nullopt when it can.
std::optional<std::string> dsn_parse_problem(const std::string& dsn) {
  if (!is_connection_string(dsn))
    return std::nullopt;
  char* error = nullptr;
  PQconninfoOption* options = libpq().PQconninfoParse(dsn.c_str(), &error);
  if (options != nullptr) {
    libpq().PQconninfoFree(options);
    return std::nullopt;
  }
  std::string reason = without_quoted_values(first_line(error));
  libpq().PQfreemem(error);
  return reason;
}

// Server notices (e.g. "relation already exists, skipping") go to the debug log, not stderr.
void log_notice(void*, const char* message) {
  observability::log_debug("PostgreSQL: " + first_line(message));
}

}  // namespace

std::string describe_dsn(const std::string& dsn) {
  if (!dsn.empty() && !is_connection_string(dsn))
    return "dbname=" + dsn;
  char* error = nullptr;
  PQconninfoOption* options = libpq().PQconninfoParse(dsn.c_str(), &error);
  if (options == nullptr) {
    std::string reason = without_quoted_values(first_line(error));
    libpq().PQfreemem(error);
    return "an unparsable PostgreSQL connection string (" + reason + ")";
  }
  std::string description;
  for (const std::string_view wanted : {"host", "hostaddr", "port", "dbname", "user"}) {
    for (PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
      if (option->keyword != wanted || option->val == nullptr || *option->val == '\0')
        continue;
      if (!description.empty())
        description += ' ';
      description += std::string(wanted) + "=" + option->val;
    }
  }
  libpq().PQconninfoFree(options);
  return description.empty() ? "the default PostgreSQL server (libpq defaults, PG* variables)"
                             : description;
}

std::int32_t PgResult::binary_int32(int row, int column) const {
  const std::string_view bytes = value(row, column);
  if (bytes.size() != 4)
    throw std::logic_error("PgResult::binary_int32: column is not a binary int4");
  std::uint32_t network = 0;
  std::memcpy(&network, bytes.data(), 4);
  return static_cast<std::int32_t>(ntohl(network));
}

std::int64_t PgResult::binary_int64(int row, int column) const {
  const std::string_view bytes = value(row, column);
  if (bytes.size() != 8)
    throw std::logic_error("PgResult::binary_int64: column is not a binary int8");
  std::uint64_t value = 0;
  for (const char byte : bytes)
    value = (value << 8) | static_cast<unsigned char>(byte);
  return static_cast<std::int64_t>(value);
}

long PgResult::affected_rows() const {
  const char* count = libpq().PQcmdTuples(result_.get());
  return count == nullptr || *count == '\0' ? 0 : std::strtol(count, nullptr, 10);
}

PgConnection::PgConnection(const PgConnectOptions& options)
    : description_(describe_dsn(options.dsn)) {
  // libpq's own message for a string it cannot parse may quote the password: say it ourselves.
  if (const auto problem = dsn_parse_problem(options.dsn)) {
    throw PgError("cannot connect to PostgreSQL: the dsn is not a valid connection string (" +
                      *problem +
                      "); write it as \"host=... port=... dbname=... user=...\" or "
                      "postgresql://user@host:port/dbname, with special characters "
                      "percent-encoded in a URI",
                  "", true);
  }
  const std::string timeout = std::to_string(options.connect_timeout.count());
  // Later keywords override earlier ones, and the dsn is expanded where it stands: our defaults
  // come first, so whatever the dsn says wins.
  const char* keywords[] = {
      "connect_timeout",     "application_name", "keepalives", "keepalives_idle",
      "keepalives_interval", "keepalives_count", "dbname",     nullptr};
  const char* values[] = {
      timeout.c_str(), options.application_name.c_str(), "1", "10", "5", "3", options.dsn.c_str(),
      nullptr};
  conn_ = libpq().PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn_ == nullptr)
    throw PgError("cannot connect to PostgreSQL (" + description_ + "): out of memory", "", true);
  if (libpq().PQstatus(conn_) != CONNECTION_OK) {
    const std::string reason = first_line(libpq().PQerrorMessage(conn_));
    libpq().PQfinish(conn_);
    conn_ = nullptr;
    throw PgError("cannot connect to PostgreSQL (" + description_ + "): " + reason +
                      "; check the dsn and that the server is up",
                  "", true);
  }
  libpq().PQsetNoticeProcessor(conn_, &log_notice, nullptr);
}

PgConnection::~PgConnection() {
  if (conn_ != nullptr)
    libpq().PQfinish(conn_);
}

PgResult PgConnection::check(PGresult* raw, std::string_view what) {
  PgResult result(raw);
  const ExecStatusType status = raw == nullptr ? PGRES_FATAL_ERROR : libpq().PQresultStatus(raw);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY)
    return result;
  const char* state = raw == nullptr ? nullptr : libpq().PQresultErrorField(raw, PG_DIAG_SQLSTATE);
  const std::string message = first_line(raw == nullptr ? libpq().PQerrorMessage(conn_)
                                                        : libpq().PQresultErrorMessage(raw));
  const bool lost = libpq().PQstatus(conn_) != CONNECTION_OK;
  throw PgError("PostgreSQL (" + description_ + ") failed `" + statement_summary(what) +
                    "`: " + (message.empty() ? first_line(libpq().PQerrorMessage(conn_)) : message),
                state == nullptr ? "" : state, lost);
}

PgResult PgConnection::exec(const std::string& sql) {
  return check(libpq().PQexec(conn_, sql.c_str()), sql);
}

PgResult PgConnection::exec_params(const std::string& sql,
                                   const std::vector<std::optional<std::string>>& params,
                                   bool binary_results) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  return check(libpq().PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                    values.data(), nullptr, nullptr, binary_results ? 1 : 0),
               sql);
}

void PgConnection::prepare(const std::string& name, const std::string& sql) {
  check(libpq().PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr), sql);
}

PgResult PgConnection::exec_prepared(const std::string& name,
                                     const std::vector<std::optional<std::string>>& params,
                                     bool binary_results) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  return check(libpq().PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()),
                                      values.data(), nullptr, nullptr, binary_results ? 1 : 0),
               name);
}

bool PgConnection::in_transaction() const noexcept {
  const PGTransactionStatusType status = libpq().PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

void PgConnection::rollback_quietly() noexcept {
  if (!ok() || !in_transaction())
    return;
  PGresult* result = libpq().PQexec(conn_, "ROLLBACK");
  if (result != nullptr)
    libpq().PQclear(result);
}

void PgConnection::consume_input() {
  if (libpq().PQconsumeInput(conn_) == 0) {
    throw PgError("lost the connection to PostgreSQL (" + description_ +
                      "): " + first_line(libpq().PQerrorMessage(conn_)),
                  "", true);
  }
}

std::vector<std::string> PgConnection::take_notifications() {
  std::vector<std::string> channels;
  for (auto& notification : take_notifications_with_payloads())
    channels.push_back(std::move(notification.channel));
  return channels;
}

std::vector<PgConnection::Notification> PgConnection::take_notifications_with_payloads() {
  std::vector<Notification> notifications;
  while (PGnotify* notify = libpq().PQnotifies(conn_)) {
    notifications.push_back({notify->relname, notify->extra == nullptr ? "" : notify->extra});
    libpq().PQfreemem(notify);
  }
  return notifications;
}

}  // namespace warren::postgres
