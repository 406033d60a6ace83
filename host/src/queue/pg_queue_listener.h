// Wakes the table-queue engine when another process inserts rows into the PostgreSQL queue: a
// connection of its own that LISTENs on the channel the insert trigger notifies ('warren_queue'),
// on a thread of its own that waits in poll() on that connection's socket and on a pipe that
// stop (the destructor) writes to.
//
// Notifications are not queued for a disconnected listener: after each (re)connect it wakes the
// engine once, which then claims whatever arrived meanwhile. While the server is unreachable it
// tries again every few seconds; the engine's polling covers the gap.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace warren::queue {

class PgQueueListener {
 public:
  struct Options {
    std::string dsn;  // never logged
    std::string application_name;
    std::chrono::milliseconds connect_timeout{10000};
  };

  // Starts listening at once, on its own thread; `wake` is called from that thread.
  PgQueueListener(Options options, std::function<void()> wake);
  // Stops the thread; `wake` is not called once this returns.
  ~PgQueueListener();
  PgQueueListener(const PgQueueListener&) = delete;
  PgQueueListener& operator=(const PgQueueListener&) = delete;

 private:
  void run();
  // Listens on one connection until it breaks (returns false) or stop is asked (true).
  bool listen_once();
  // Waits until `fd` (if >= 0) is readable or `timeout` passed (false), or stop is asked (true).
  bool stopped_while_waiting(int fd, std::chrono::milliseconds timeout);

  const Options options_;
  const std::function<void()> wake_;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace warren::queue
