// See pg_connection.h.
#include "outbox/pg_connection.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>

#include "observability/log.h"

namespace warren::outbox {
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

// Server notices (e.g. "relation already exists, skipping") go to the debug log, not stderr.
void log_notice(void*, const char* message) {
  observability::log_debug("PostgreSQL: " + first_line(message));
}

}  // namespace

std::string describe_dsn(const std::string& dsn) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error);
  if (options == nullptr) {
    std::string reason = first_line(error);
    PQfreemem(error);
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
  PQconninfoFree(options);
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

long PgResult::affected_rows() const {
  const char* count = PQcmdTuples(result_.get());
  return count == nullptr || *count == '\0' ? 0 : std::strtol(count, nullptr, 10);
}

PgConnection::PgConnection(const PgConnectOptions& options)
    : description_(describe_dsn(options.dsn)) {
  const std::string timeout = std::to_string(options.connect_timeout.count());
  // Later keywords override earlier ones, and the dsn is expanded where it stands: our defaults
  // come first, so whatever the dsn says wins.
  const char* keywords[] = {
      "connect_timeout",     "application_name", "keepalives", "keepalives_idle",
      "keepalives_interval", "keepalives_count", "dbname",     nullptr};
  const char* values[] = {
      timeout.c_str(), options.application_name.c_str(), "1", "10", "5", "3", options.dsn.c_str(),
      nullptr};
  conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn_ == nullptr)
    throw PgError("cannot connect to PostgreSQL (" + description_ + "): out of memory", "", true);
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string reason = first_line(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    throw PgError("cannot connect to PostgreSQL (" + description_ + "): " + reason +
                      "; check the dsn and that the server is up",
                  "", true);
  }
  PQsetNoticeProcessor(conn_, &log_notice, nullptr);
}

PgConnection::~PgConnection() {
  if (conn_ != nullptr)
    PQfinish(conn_);
}

PgResult PgConnection::check(PGresult* raw, std::string_view what) {
  PgResult result(raw);
  const ExecStatusType status = raw == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(raw);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY)
    return result;
  const char* state = raw == nullptr ? nullptr : PQresultErrorField(raw, PG_DIAG_SQLSTATE);
  const std::string message =
      first_line(raw == nullptr ? PQerrorMessage(conn_) : PQresultErrorMessage(raw));
  const bool lost = PQstatus(conn_) != CONNECTION_OK;
  throw PgError("PostgreSQL (" + description_ + ") failed `" + statement_summary(what) +
                    "`: " + (message.empty() ? first_line(PQerrorMessage(conn_)) : message),
                state == nullptr ? "" : state, lost);
}

PgResult PgConnection::exec(const std::string& sql) {
  return check(PQexec(conn_, sql.c_str()), sql);
}

PgResult PgConnection::exec_params(const std::string& sql,
                                   const std::vector<std::optional<std::string>>& params,
                                   bool binary_results) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  return check(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                            values.data(), nullptr, nullptr, binary_results ? 1 : 0),
               sql);
}

bool PgConnection::in_transaction() const noexcept {
  const PGTransactionStatusType status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

void PgConnection::rollback_quietly() noexcept {
  if (!ok() || !in_transaction())
    return;
  PGresult* result = PQexec(conn_, "ROLLBACK");
  if (result != nullptr)
    PQclear(result);
}

void PgConnection::consume_input() {
  if (PQconsumeInput(conn_) == 0) {
    throw PgError("lost the connection to PostgreSQL (" + description_ +
                      "): " + first_line(PQerrorMessage(conn_)),
                  "", true);
  }
}

std::vector<std::string> PgConnection::take_notifications() {
  std::vector<std::string> channels;
  while (PGnotify* notify = PQnotifies(conn_)) {
    channels.emplace_back(notify->relname);
    PQfreemem(notify);
  }
  return channels;
}

}  // namespace warren::outbox
