// See handler_runner.h.
#include "runtime/handler_runner.h"

#include <stdexcept>

namespace warren::runtime {
namespace {

class InProcessLane final : public HandlerLane {
 public:
  explicit InProcessLane(const plugin::HandlerInstance& handler) : handler_(handler) {}
  bool ready_for_message(const std::atomic<bool>&) override { return true; }
  std::optional<std::string> run(const warren_message& view, const transport::InboundMessage&,
                                 host_abi::MessageServices& services) override {
    handler_.handle(view, services);  // never throws: the plugin's instance catches everything
    return std::nullopt;
  }

 private:
  const plugin::HandlerInstance& handler_;
};

}  // namespace

HandlerLane::Ticket HandlerLane::submit(const warren_message&, const transport::InboundMessage&,
                                        host_abi::MessageServices&, bool) {
  throw std::logic_error("this handler lane runs one message at a time: run(), not submit()");
}

HandlerLane::Awaited HandlerLane::await(Ticket) {
  throw std::logic_error("this handler lane runs one message at a time: run(), not await()");
}

std::unique_ptr<HandlerLane> InProcessRunner::lane(std::size_t) {
  return std::make_unique<InProcessLane>(handler_);
}

}  // namespace warren::runtime
