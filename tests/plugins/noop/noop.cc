// libnoop.so, plugin "noop": acks every message and does nothing else. The baseline for
// benchmarks: whatever time a message takes with it is the host's own overhead.
#include <warren/sdk.h>

namespace {

class Noop final : public warren::Handler {
 public:
  explicit Noop(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    return warren::Outcome::ack();
  }
};

}  // namespace

WARREN_PLUGIN(Noop, "noop", "1.0.0")
