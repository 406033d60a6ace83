// bench_outbox_producer: the application side of the outbox benchmark (libpq).
//   bulk DSN N SIZE EXCHANGE ROUTING_KEY
//       inserts N rows in ONE transaction (so the relay starts on all of them at its commit) and
//       prints the wall-clock time the COMMIT returned, in ns.
//   trickle DSN N INTERVAL_MS SIZE EXCHANGE ROUTING_KEY
//       inserts N rows one transaction each, INTERVAL_MS apart, and prints one line per row:
//       "message_id<TAB>commit_ns" (the time the COMMIT returned), for commit-to-handler latency.
#include <libpq-fe.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_outbox_producer: %s\n", what.c_str());
  std::exit(1);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void exec(PGconn* db, const std::string& sql) {
  PGresult* result = PQexec(db, sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    die(sql.substr(0, 60) + ": " + PQerrorMessage(db));
  PQclear(result);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    die("usage: bulk DSN N SIZE EXCHANGE KEY | trickle DSN N INTERVAL_MS SIZE EXCHANGE KEY");
  const std::string mode = argv[1];
  if (!((mode == "bulk" && argc == 7) || (mode == "trickle" && argc == 8)))
    die("usage: bulk DSN N SIZE EXCHANGE KEY | trickle DSN N INTERVAL_MS SIZE EXCHANGE KEY");
  PGconn* db = PQconnectdb(argv[2]);
  if (PQstatus(db) != CONNECTION_OK)
    die(std::string("connect: ") + PQerrorMessage(db));
  const long count = std::atol(argv[3]);

  if (mode == "bulk") {
    const std::string size = std::to_string(std::atol(argv[4]));
    exec(db, "BEGIN");
    exec(db,
         "INSERT INTO warren_outbox (exchange, routing_key, payload, headers) "
         "SELECT '" +
             std::string(argv[5]) + "', '" + argv[6] + "', convert_to(repeat('x', " + size +
             "), 'UTF8'), '{\"x-origin\": \"bench\"}' FROM generate_series(1, " +
             std::to_string(count) + ")");
    exec(db, "COMMIT");
    std::printf("%lld\n", static_cast<long long>(now_ns()));
  } else {
    const auto interval = std::chrono::milliseconds(std::atol(argv[4]));
    const std::string size = std::to_string(std::atol(argv[5]));
    const std::string insert = "SELECT warren_outbox_enqueue('" + std::string(argv[6]) + "', '" +
                               argv[7] + "', convert_to(repeat('x', " + size +
                               "), 'UTF8'), '{}', $1)";
    for (long i = 0; i < count; ++i) {
      const std::string message_id =
          "latency-" + std::to_string(now_ns()) + "-" + std::to_string(i);
      const char* values[] = {message_id.c_str()};
      exec(db, "BEGIN");
      PGresult* result = PQexecParams(db, insert.c_str(), 1, nullptr, values, nullptr, nullptr, 0);
      if (PQresultStatus(result) != PGRES_TUPLES_OK)
        die(std::string("enqueue: ") + PQerrorMessage(db));
      PQclear(result);
      exec(db, "COMMIT");
      std::printf("%s\t%lld\n", message_id.c_str(), static_cast<long long>(now_ns()));
      std::fflush(stdout);
      std::this_thread::sleep_for(interval);
    }
  }
  PQfinish(db);
  return 0;
}
