// A libpq connection for one handler thread at a time: open, run a statement with text
// parameters, close. Errors are std::runtime_error naming the statement and PostgreSQL's answer.
#pragma once

#include <libpq-fe.h>

#include <string>
#include <vector>

namespace livraria {

class PgSession {
 public:
  explicit PgSession(const std::string& dsn);  // throws std::runtime_error
  ~PgSession();
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;

  // Runs one statement; returns the number of rows it affected (or returned).
  long exec(const std::string& sql, const std::vector<std::string>& params = {});
  bool ok() const noexcept { return PQstatus(conn_) == CONNECTION_OK; }
  void rollback_quietly() noexcept;

 private:
  PGconn* conn_ = nullptr;
};

}  // namespace livraria
