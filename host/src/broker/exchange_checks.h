// Which exchanges the publisher knows to exist, as pure bookkeeping (no rabbitmq-c). A publish to
// a missing exchange makes the broker close the channel it went out on, and with that channel go
// the confirms of every other publish on it (issue 19, defect 2). So the publisher checks an
// exchange (a passive exchange.declare, on a channel of its own) before its first publish to it
// on a connection, and parks the publishes to it meanwhile: a missing one fails those publishes
// alone and never reaches the confirm channel. One check at a time (a refused check closes its
// channel, which would discard the ones behind it).
//
// Known exchanges are forgotten when the connection is, or when the broker names one in closing
// the confirm channel (deleted after its check): the next publish to it is checked again.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/pending_publish.h"

namespace warren::broker {

class ExchangeChecks {
 public:
  using Publishes = std::vector<std::shared_ptr<PendingPublish>>;

  // May be published to without a check: checked on this connection, or the default exchange
  // (which always exists and cannot be declared, not even passively).
  bool known(const std::string& exchange) const;
  // `publish` waits for the check of its exchange (queued unless already queued or running).
  void park(std::shared_ptr<PendingPublish> publish);
  // The exchange to check now, marked as being checked; nullopt while a check runs or none waits.
  std::optional<std::string> start_next();
  // An exchange waits for its check and none is running.
  bool check_due() const noexcept { return !checking_ && !queued_.empty(); }
  // The exchange being checked, if any.
  const std::optional<std::string>& checking() const noexcept { return checking_; }

  // The running check found its exchange: it is known; its parked publishes, in order, to send.
  Publishes found();
  // The running check found no such exchange: its parked publishes, to fail.
  Publishes missing();
  // The broker named `exchange` in closing the confirm channel: check it again before the next
  // publish to it.
  void forget(const std::string& exchange) { known_.erase(exchange); }

  // Parked publishes past their deadline (resolved or not), taken out.
  Publishes take_expired(PendingPublish::Clock::time_point now);
  // The connection is gone: nothing is known any more and no check runs; every parked publish,
  // to send again on the next connection.
  Publishes reset();

  std::size_t parked() const noexcept;

 private:
  Publishes take_parked(const std::string& exchange);

  std::set<std::string> known_;
  std::map<std::string, Publishes> parked_;  // by exchange, in the order parked
  std::deque<std::string> queued_;           // exchanges waiting for a check
  std::optional<std::string> checking_;
};

}  // namespace warren::broker
