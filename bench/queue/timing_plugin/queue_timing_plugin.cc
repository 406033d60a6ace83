// bench_queue_timing: the no-op plugin of the SQLite queue benchmark (acks every message, like
// tests/plugins/noop) that also notes when the first message arrived and when the `expect`-th
// was handled, and the process's CPU time (user+sys, getrusage) at those two moments. Writes
// "first_ns last_ns cpu_ns maxrss_kb" to `report_file`: the same line, measured the same way, as
// bench_queue_bare_consumer prints. Settings: expect (count), report_file (path).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <warren/sdk.h>

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (static_cast<std::int64_t>(usage.ru_utime.tv_sec) + usage.ru_stime.tv_sec) * 1000000000 +
         (static_cast<std::int64_t>(usage.ru_utime.tv_usec) + usage.ru_stime.tv_usec) * 1000;
}

class QueueTiming final : public warren::Handler {
 public:
  explicit QueueTiming(warren::PluginContext& ctx)
      : expect_(std::stol(ctx.setting("expect").value_or("0"))),
        report_file_(ctx.setting("report_file").value_or("")) {
    if (expect_ <= 0 || report_file_.empty()) {
      throw std::runtime_error("bench_queue_timing needs the settings expect and report_file");
    }
  }

  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    if (!started_.exchange(true)) {
      first_cpu_ = cpu_ns();
      first_ns_ = now_ns();
    }
    if (++handled_ == expect_) {
      const std::int64_t last_ns = now_ns();
      const std::int64_t last_cpu = cpu_ns();
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      if (std::FILE* out = std::fopen(report_file_.c_str(), "w")) {
        std::fprintf(out, "%lld %lld %lld %ld\n", static_cast<long long>(first_ns_.load()),
                     static_cast<long long>(last_ns),
                     static_cast<long long>(last_cpu - first_cpu_.load()), usage.ru_maxrss);
        std::fclose(out);
      }
    }
    return warren::Outcome::ack();
  }

 private:
  const long expect_;
  const std::string report_file_;
  std::atomic<bool> started_{false};
  std::atomic<std::int64_t> first_ns_{0};
  std::atomic<std::int64_t> first_cpu_{0};
  std::atomic<long> handled_{0};
};

}  // namespace

WARREN_PLUGIN(QueueTiming, "bench_queue_timing", "1.0.0")
