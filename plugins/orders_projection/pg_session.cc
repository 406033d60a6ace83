// See pg_session.h.
#include "pg_session.h"

#include <cstdlib>
#include <stdexcept>

namespace livraria {
namespace {

std::string trimmed(const char* text) {
  std::string s = text == nullptr ? "" : text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

}  // namespace

PgSession::PgSession(const std::string& dsn) : conn_(PQconnectdb(dsn.c_str())) {
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string reason = trimmed(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    throw std::runtime_error("orders_projection: cannot connect to PostgreSQL: " + reason);
  }
}

PgSession::~PgSession() {
  if (conn_ != nullptr)
    PQfinish(conn_);
}

long PgSession::exec(const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  for (const auto& param : params)
    values.push_back(param.c_str());
  PGresult* result = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                  values.data(), nullptr, nullptr, 0);
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const std::string reason = trimmed(PQresultErrorMessage(result));
    PQclear(result);
    throw std::runtime_error("orders_projection: `" + sql.substr(0, 60) + "` failed: " + reason);
  }
  const char* tuples = PQcmdTuples(result);
  const long count = status == PGRES_TUPLES_OK
                         ? PQntuples(result)
                         : (tuples != nullptr && *tuples != '\0' ? std::atol(tuples) : 0);
  PQclear(result);
  return count;
}

void PgSession::rollback_quietly() noexcept {
  if (conn_ == nullptr || PQtransactionStatus(conn_) == PQTRANS_IDLE)
    return;
  PQclear(PQexec(conn_, "ROLLBACK"));
}

}  // namespace livraria
