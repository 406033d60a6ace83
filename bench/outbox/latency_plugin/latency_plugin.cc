// bench_outbox_latency: notes when each message reaches its handler, appending
// "message_id<TAB>handled_ns" (wall clock, like bench_outbox_producer's commit times) to
// `record_file`, and acks. Setting: record_file (path).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include <warren/sdk.h>

namespace {

class Latency final : public warren::Handler {
 public:
  explicit Latency(warren::PluginContext& ctx) {
    const auto path = ctx.setting("record_file");
    if (!path)
      throw std::invalid_argument("bench_outbox_latency needs the setting record_file");
    fd_ = ::open(path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::invalid_argument("bench_outbox_latency: cannot open " + *path);
  }
  ~Latency() override { ::close(fd_); }

  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const std::string line = std::string(msg.message_id()) + '\t' + std::to_string(now) + '\n';
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      throw std::runtime_error("bench_outbox_latency: cannot write the record");
    return warren::Outcome::ack();
  }

 private:
  int fd_ = -1;
};

}  // namespace

WARREN_PLUGIN(Latency, "bench_outbox_latency", "1.0.0")
