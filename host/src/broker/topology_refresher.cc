// See topology_refresher.h.
#include "broker/topology_refresher.h"

#include <algorithm>

#include "broker/amqp_errors.h"
#include "observability/log.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

constexpr amqp_channel_t kRefreshChannel = 1;  // on the refresher's own connection

// Connect and each declaration wait at most this long (less when [broker] connect_timeout is
// shorter): nothing waits for a refresh, but the destructor cannot cut a connect short, and a
// host stopping must not wait long for one.
constexpr std::chrono::milliseconds kRefreshTimeoutCap{5000};

ConnectionOptions capped(ConnectionOptions options) {
  options.connect_timeout = std::min(options.connect_timeout, kRefreshTimeoutCap);
  options.connection_name += " topology";
  return options;
}

}  // namespace

TopologyRefresher::TopologyRefresher(const TopologyDeclarer& declarer, ConnectionOptions options,
                                     transport::BackoffPolicy retry)
    : declarer_(declarer), options_(capped(std::move(options))), backoff_(retry) {}

TopologyRefresher::~TopologyRefresher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (active_ != nullptr)
      active_->abort_socket();
  }
  changed_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void TopologyRefresher::refresh(const BrokerEndpoint& endpoint, std::vector<std::string> consumed) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_)
      return;
    wanted_ = Request{endpoint, std::move(consumed)};
    ++generation_;
    // A refresh in progress is for a connection that is gone: cut it short.
    if (active_ != nullptr)
      active_->abort_socket();
    if (!thread_.joinable())
      thread_ = std::thread([this] { run(); });
  }
  changed_.notify_all();
}

int TopologyRefresher::completed() const {
  std::lock_guard lock(mutex_);
  return completed_;
}

void TopologyRefresher::run() {
  std::unique_lock lock(mutex_);
  std::uint64_t done = 0;  // the generation last declared
  bool failing = false;    // the last attempt failed (its failure was logged)
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || generation_ != done; });
    if (stopping_)
      return;
    const Request request = wanted_;
    const std::uint64_t generation = generation_;
    lock.unlock();
    std::string failure;
    try {
      attempt(request);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    lock.lock();
    if (stopping_)
      return;
    if (failure.empty()) {
      ++completed_;
      backoff_.reset();
      failing = false;
      done = generation;
      observability::log_info("topology declared again on " + request.endpoint.describe() +
                              " (behind consuming)");
      continue;
    }
    if (generation_ != generation)
      continue;  // a newer connection's refresh goes first, at once
    const auto wait = backoff_.next(transport::random_unit());
    observability::log(failing ? observability::LogLevel::debug : observability::LogLevel::warn, {},
                       "declaring the topology again on " + request.endpoint.describe() +
                           " failed: " + failure +
                           ". Consuming goes on (everything was declared at start); trying "
                           "again in " +
                           std::to_string(wait.count()) + " ms");
    failing = true;
    changed_.wait_for(lock, wait, [&] { return stopping_ || generation_ != generation; });
  }
}

void TopologyRefresher::attempt(const Request& request) {
  std::unique_ptr<AmqpConnection> connection = AmqpConnection::open(request.endpoint, options_);
  {
    std::lock_guard lock(mutex_);
    if (stopping_)
      return;
    active_ = connection.get();
  }
  struct Release {  // whatever happens, abort_socket() no longer sees the connection
    TopologyRefresher& self;
    ~Release() {
      std::lock_guard lock(self.mutex_);
      self.active_ = nullptr;
    }
  } release{*this};
  amqp_channel_open(connection->state(), kRefreshChannel);
  connection->check(connection->last_reply(), "opening a channel to declare the topology again");
  declarer_.declare_again(*connection, kRefreshChannel, request.consumed);
  connection->close();
}

}  // namespace warren::broker
