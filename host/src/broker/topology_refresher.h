// Declares the topology again after the consuming connection came back, behind consuming: on a
// connection and a thread of its own, so that no declaration ever holds the I/O thread or a
// channel that deliveries need (issue 21).
//
// Why: on a RabbitMQ cluster, declarations and bindings are cluster-wide metadata transactions
// (mnesia) that take locks on every member. While a member is frozen (SIGSTOP, a paused VM, a
// half-open network) and not yet seen as down (net_ticktime, 60 s by default), a queue.bind waits
// for it: measured on three nodes, each declaration on a healthy node timed out, and a host that
// declared before consuming did not consume again for 42-52 s. Consuming itself (channel.open,
// basic.qos, basic.consume on a quorum queue) needs no such lock. Everything was declared at start;
// declaring it again only brings back what someone deleted meanwhile, so it can wait.
//
// A refresh that fails (a timeout, a refusal) is logged and tried again on the reconnect backoff
// until it succeeds or another refresh replaces it; the destructor cuts one in progress short.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/broker_endpoint.h"
#include "broker/topology.h"
#include "transport/backoff.h"

namespace warren::broker {

class TopologyRefresher {
 public:
  // `declarer` must outlive this object; `retry`: the waits between failed attempts.
  TopologyRefresher(const TopologyDeclarer& declarer, ConnectionOptions options,
                    transport::BackoffPolicy retry);
  ~TopologyRefresher();
  TopologyRefresher(const TopologyRefresher&) = delete;
  TopologyRefresher& operator=(const TopologyRefresher&) = delete;

  // From any thread, never blocks: declares everything again on `endpoint` (declare_again, with
  // the delivery bindings of `consumed`, names on the broker), in the background. Replaces a
  // refresh that waits for its retry, or that runs (it is cut short).
  void refresh(const BrokerEndpoint& endpoint, std::vector<std::string> consumed);

  // Refreshes that succeeded so far (for tests).
  int completed() const;

 private:
  struct Request {
    BrokerEndpoint endpoint;
    std::vector<std::string> consumed;
  };
  void run();
  // One attempt; throws what the declaration threw.
  void attempt(const Request& request);

  const TopologyDeclarer& declarer_;
  const ConnectionOptions options_;
  transport::Backoff backoff_;  // run() only

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Request wanted_;                // the latest refresh asked for
  std::uint64_t generation_ = 0;  // refresh() calls so far
  bool stopping_ = false;
  AmqpConnection* active_ = nullptr;  // the attempt's connection, to cut it short
  int completed_ = 0;
  std::thread thread_;  // started by the first refresh()
};

}  // namespace warren::broker
