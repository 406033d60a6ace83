// libpq, loaded when PostgreSQL is first used rather than linked into every warren process.
//
// Why: libpq.so.5 pulls in OpenLDAP, GnuTLS, p11-kit, Kerberos and their dependencies, some 3 MB
// of resident memory in every host, though most hosts (RabbitMQ or SQLite, no PostgreSQL outbox
// or inbox store) never open a PostgreSQL connection (bench/queue: the SQLite host's peak RSS
// went from about 15 MB to about 12 MB). The library's ABI is stable (the soname has been
// libpq.so.5 since PostgreSQL 8.4), so the functions are looked up by name once, with the
// signatures of the libpq-fe.h this is compiled against.
#pragma once

#include <libpq-fe.h>

#include "system_library/optional_library.h"

namespace warren::postgres {

// Every libpq function Warren calls. X(name) for each, so that the list is written once.
// clang-format off
#define WARREN_LIBPQ_FUNCTIONS(X) \
  X(PQclear) \
  X(PQcmdStatus) \
  X(PQcmdTuples) \
  X(PQconnectdbParams) \
  X(PQconninfoFree) \
  X(PQconninfoParse) \
  X(PQconsumeInput) \
  X(PQerrorMessage) \
  X(PQexec) \
  X(PQexecParams) \
  X(PQexecPrepared) \
  X(PQfinish) \
  X(PQfreemem) \
  X(PQgetisnull) \
  X(PQgetlength) \
  X(PQgetvalue) \
  X(PQnotifies) \
  X(PQntuples) \
  X(PQprepare) \
  X(PQresultErrorField) \
  X(PQresultErrorMessage) \
  X(PQresultStatus) \
  X(PQsetNoticeProcessor) \
  X(PQsocket) \
  X(PQstatus) \
  X(PQtransactionStatus)
// clang-format on

struct LibpqApi {
  WARREN_LIBPQ_FUNCTIONS(WARREN_OPTIONAL_POINTER)
};

// The loaded library (dlopen on the first call, from any thread; never unloaded). Throws
// std::runtime_error saying what to install when libpq.so.5 or one of its functions is missing.
const LibpqApi& libpq();

}  // namespace warren::postgres
