// bench_timing: acks every message and notes when the first arrived and when the `expect`-th was
// handled, writing "first_ns last_ns" to `report_file` (wall clock, like the baseline).
// Settings: expect (count), report_file (path).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>

#include <warren/sdk.h>

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Timing final : public warren::Handler {
 public:
  explicit Timing(warren::PluginContext& ctx)
      : expect_(std::stol(ctx.setting("expect").value_or("0"))),
        report_file_(ctx.setting("report_file").value_or("")) {
    if (expect_ <= 0 || report_file_.empty()) {
      throw std::runtime_error("bench_timing needs the settings expect and report_file");
    }
  }

  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    std::int64_t unset = 0;
    first_ns_.compare_exchange_strong(unset, now_ns());
    if (++handled_ == expect_) {
      if (std::FILE* out = std::fopen(report_file_.c_str(), "w")) {
        std::fprintf(out, "%lld %lld\n", static_cast<long long>(first_ns_.load()),
                     static_cast<long long>(now_ns()));
        std::fclose(out);
      }
    }
    return warren::Outcome::ack();
  }

 private:
  const long expect_;
  const std::string report_file_;
  std::atomic<std::int64_t> first_ns_{0};
  std::atomic<long> handled_{0};
};

}  // namespace

WARREN_PLUGIN(Timing, "bench_timing", "1.0.0")
