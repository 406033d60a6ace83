// One transaction on a PgConnection, rolled back unless committed: a statement that throws
// (PgError, or the caller's own refusal) leaves the connection usable, with nothing half done.
#pragma once

#include "postgres/pg_connection.h"

namespace warren::postgres {

class PgTransaction {
 public:
  // BEGIN; throws PgError.
  explicit PgTransaction(PgConnection& connection) : connection_(connection) {
    connection_.exec("BEGIN");
  }
  ~PgTransaction() {
    if (!committed_)
      connection_.rollback_quietly();
  }
  PgTransaction(const PgTransaction&) = delete;
  PgTransaction& operator=(const PgTransaction&) = delete;

  // COMMIT; throws PgError (the transaction is then over: rolled back by the server).
  void commit() {
    committed_ = true;
    connection_.exec("COMMIT");
  }

 private:
  PgConnection& connection_;
  bool committed_ = false;
};

}  // namespace warren::postgres
