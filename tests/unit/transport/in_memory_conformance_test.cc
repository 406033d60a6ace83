// The transport conformance suite (conformance/transport_conformance.h) on the in-memory
// transport.
#include "conformance/transport_conformance.h"
#include "runtime/in_memory_transport.h"

namespace warren::transport::testing {
namespace {

class InMemoryBackend final : public ConformanceBackend {
 public:
  std::string unique_name(std::string_view base) override { return std::string(base); }
  void prepare(config::Config& /*config*/) override {}
  std::unique_ptr<Transport> open(const config::Config& config) override {
    auto transport = std::make_unique<runtime::InMemoryTransport>(config);
    last_ = transport.get();
    return transport;
  }
  std::size_t ready_count(const std::string& queue) override { return last_->depth(queue); }
  void lose_connection() override { last_->lose_connection(); }

 private:
  // The transport is the broker: it lives in the fixture until TearDown, after the last
  // ready_count.
  runtime::InMemoryTransport* last_ = nullptr;
};

INSTANTIATE_TYPED_TEST_SUITE_P(InMemory, TransportConformance, InMemoryBackend);

}  // namespace
}  // namespace warren::transport::testing
