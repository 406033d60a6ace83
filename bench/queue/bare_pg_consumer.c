/* bench_queue_bare_pg_consumer DSN SCHEMA QUEUE COUNT BATCH: the baseline Warren's PostgreSQL
 * queue is measured against (issue 13). A bare libpq loop over the same table: claim up to BATCH
 * rows with Warren's prepared `warren_claim` (a MATERIALIZED CTE ... LIMIT n FOR UPDATE SKIP
 * LOCKED, then UPDATE ... RETURNING the same columns, binary results), "handle" them (read the
 * body), then ack the batch with Warren's prepared `warren_ack` (one UPDATE over
 * unnest(ids[], tokens[]) fenced by lease_token), again until COUNT rows are done. Both statements
 * are copied word for word from host/src/queue/pg_queue_database.cc. Each statement is its own
 * transaction (autocommit: one round trip each, where Warren sends BEGIN and COMMIT around its
 * round); the server's synchronous_commit applies, as it does to Warren.
 *
 * COUNT 0: drain until a claim finds nothing (several of these loops in parallel stand for
 * several hosts; the driver fills exactly the rows to drain).
 *
 * Prints "first_ns last_ns cpu_ns maxrss_kb": wall clock when the first row was handled and when
 * the last one was (its ack commits right after, as Warren's does), user+sys CPU between those two
 * moments, and the process's peak RSS. On stderr: rows, a checksum, and the mean wall time of a
 * claim statement (to show it does not grow with the done rows in the table). */
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Warren's claim and ack (host/src/queue/pg_queue_database.cc), word for word. */
static const char kClaim[] =
    "WITH ready AS MATERIALIZED (SELECT id FROM warren_queue WHERE queue = $1 AND "
    "status = 'pending' AND next_attempt_at <= now() ORDER BY next_attempt_at, id "
    "LIMIT $2 FOR UPDATE SKIP LOCKED) UPDATE warren_queue q SET status = "
    "'running', lease_owner = $3, lease_until = now() + $4 * interval '1 "
    "millisecond', lease_token = q.lease_token + 1 FROM ready WHERE q.id = "
    "ready.id RETURNING "
    "q.id, q.lease_token, (extract(epoch FROM q.next_attempt_at) * 1000)::int8, q.max_attempts, "
    "q.message_id, q.exchange, q.routing_key, q.content_type, q.headers::text, q.body, "
    "q.attempts, q.redelivered, q.queue";
static const char kAck[] =
    "UPDATE warren_queue q SET status = 'done', finished_at = now(), lease_owner = NULL, "
    "lease_until = NULL FROM unnest($1::int8[], $2::int8[]) AS a(id, token) WHERE q.id = a.id "
    "AND q.lease_token = a.token AND q.status = 'running' RETURNING q.id";
static const char kLeaseMs[] = "300000"; /* Warren's default lease */

static PGconn* conn;

static void die(const char* what) {
  fprintf(stderr, "bench_queue_bare_pg_consumer: %s: %s\n", what, conn ? PQerrorMessage(conn) : "");
  exit(1);
}

static PGresult* check(PGresult* result, ExecStatusType want, const char* what) {
  if (PQresultStatus(result) != want) {
    fprintf(stderr, "bench_queue_bare_pg_consumer: %s: %s\n", what, PQresultErrorMessage(result));
    exit(1);
  }
  return result;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return ((int64_t)usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000 +
         ((int64_t)usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000;
}

static int64_t be_int64(const char* bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i)
    value = (value << 8) | (unsigned char)bytes[i];
  return (int64_t)value;
}

/* Appends "{a,b,c}" of values to out (which has room: 21 bytes per value plus 3). */
static void int_array(char* out, const int64_t* values, int n) {
  char* p = out;
  *p++ = '{';
  for (int i = 0; i < n; ++i)
    p += sprintf(p, i ? ",%lld" : "%lld", (long long)values[i]);
  *p++ = '}';
  *p = '\0';
}

int main(int argc, char** argv) {
  if (argc != 6)
    die("usage: bench_queue_bare_pg_consumer DSN SCHEMA QUEUE COUNT BATCH");
  const char* schema = argv[2];
  const char* queue = argv[3];
  const long count = atol(argv[4]);
  const int batch = atoi(argv[5]);
  if (count < 0 || batch <= 0)
    die("usage: bench_queue_bare_pg_consumer DSN SCHEMA QUEUE COUNT BATCH");
  char owner[300];
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  snprintf(owner, sizeof owner, "%s/%ld", host, (long)getpid());
  char limit[16];
  snprintf(limit, sizeof limit, "%d", batch);

  conn = PQconnectdb(argv[1]);
  if (PQstatus(conn) != CONNECTION_OK)
    die("connect");
  char set_path[300];
  snprintf(set_path, sizeof set_path, "SET search_path TO \"%s\"", schema);
  PQclear(check(PQexec(conn, set_path), PGRES_COMMAND_OK, set_path));
  PQclear(
      check(PQprepare(conn, "warren_claim", kClaim, 0, NULL), PGRES_COMMAND_OK, "prepare claim"));
  PQclear(check(PQprepare(conn, "warren_ack", kAck, 0, NULL), PGRES_COMMAND_OK, "prepare ack"));

  int64_t* ids = malloc(sizeof(int64_t) * (size_t)batch);
  int64_t* tokens = malloc(sizeof(int64_t) * (size_t)batch);
  char* id_array = malloc(22 * (size_t)batch + 3);
  char* token_array = malloc(22 * (size_t)batch + 3);
  if (ids == NULL || tokens == NULL || id_array == NULL || token_array == NULL)
    die("out of memory");

  long handled = 0, claims = 0;
  int64_t first_ns = 0, last_ns = 0, first_cpu = 0, last_cpu = 0, claim_ns = 0;
  unsigned long checksum = 0; /* the "handling": read every body */
  while (count == 0 || handled < count) {
    const char* claim_params[4] = {queue, limit, owner, kLeaseMs};
    const int64_t claim_start = mono_ns();
    PGresult* claimed =
        check(PQexecPrepared(conn, "warren_claim", 4, claim_params, NULL, NULL, /*binary=*/1),
              PGRES_TUPLES_OK, "claim");
    claim_ns += mono_ns() - claim_start;
    ++claims;
    const int rows = PQntuples(claimed);
    if (rows == 0) {
      PQclear(claimed);
      if (count == 0)
        break;
      die("the queue ran dry before COUNT rows were handled");
    }
    if (first_ns == 0) {
      first_ns = now_ns();
      first_cpu = cpu_ns();
    }
    for (int r = 0; r < rows; ++r) {
      ids[r] = be_int64(PQgetvalue(claimed, r, 0));
      tokens[r] = be_int64(PQgetvalue(claimed, r, 1));
      const unsigned char* body = (const unsigned char*)PQgetvalue(claimed, r, 9);
      const int size = PQgetlength(claimed, r, 9);
      if (size > 0)
        checksum += body[0] + body[size - 1];
    }
    PQclear(claimed);
    handled += rows;
    last_ns = now_ns();
    last_cpu = cpu_ns();

    int_array(id_array, ids, rows);
    int_array(token_array, tokens, rows);
    const char* ack_params[2] = {id_array, token_array};
    PGresult* acked = check(PQexecPrepared(conn, "warren_ack", 2, ack_params, NULL, NULL, 0),
                            PGRES_TUPLES_OK, "ack");
    if (PQntuples(acked) != rows)
      die("an ack found a row no longer leased to this loop");
    PQclear(acked);
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  printf("%lld %lld %lld %ld\n", (long long)first_ns, (long long)last_ns,
         (long long)(last_cpu - first_cpu), usage.ru_maxrss);
  fprintf(stderr,
          "bare pg loop: %ld rows, checksum %lu, mean claim %.1f us over %ld claims, libpq %d\n",
          handled, checksum, claims ? claim_ns / 1e3 / claims : 0.0, claims, PQlibVersion());
  free(ids);
  free(tokens);
  free(id_array);
  free(token_array);
  PQfinish(conn);
  return 0;
}
