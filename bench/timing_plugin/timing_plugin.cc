// The no-op plugin of the benchmarks (acks every message, like tests/plugins/noop) that also
// notes when the first message arrived and when the `expect`-th was handled, and the process's
// CPU time (user + sys, all threads) at those two moments. Writes "first_ns last_ns cpu_ns
// maxrss_kb" to `report_file`: the line the baselines print, measured the same way
// (bench/process_clock.h). Settings: expect (count), report_file (path). Built twice, as
// bench_timing (bench/consume) and bench_queue_timing (bench/queue): BENCH_TIMING_PLUGIN_NAME.
//
// report_at_exit = true (several hosts draining one queue, none of which knows when the whole
// queue is done): if `expect` is not reached, the report is written when the plugin is unloaded,
// with the time of this process's last message and its CPU then (sampled at most once a
// millisecond, so that the clock costs next to nothing per message).
//
// shared_tally = true (isolation = "process": one instance in each child): the instances count
// together (shared_tally.h) and the report is the whole worker's, "first_ns last_ns host_cpu_ns
// maxrss_kb children_cpu_ns children host_maxrss_kb": the host's CPU in the third column, as
// in-process, the children's in a fifth, how many children handled messages in a sixth
// (maxrss_kb is the reporting child's), the host's peak RSS in a seventh.
#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include <warren/sdk.h>

#include "process_clock.h"
#include "timing_plugin/shared_tally.h"

namespace {

using bench::cpu_ns;
using bench::now_ns;

class Timing final : public warren::Handler {
 public:
  explicit Timing(warren::PluginContext& ctx)
      : expect_(std::stol(ctx.setting("expect").value_or("0"))),
        report_file_(ctx.setting("report_file").value_or("")),
        report_at_exit_(ctx.setting("report_at_exit").value_or("false") == "true") {
    if (expect_ <= 0 || report_file_.empty()) {
      throw std::runtime_error(std::string(BENCH_TIMING_PLUGIN_NAME) +
                               " needs the settings expect and report_file");
    }
    if (ctx.setting("shared_tally").value_or("false") == "true")
      tally_ = std::make_unique<bench::SharedTally>(report_file_ + ".tally");
  }

  ~Timing() override {
    if (report_at_exit_ && handled_ > 0 && handled_ < expect_)
      report(last_ns_, last_cpu_);
  }

  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    if (tally_)
      return handle_in_tally();
    if (!started_.exchange(true)) {
      first_cpu_ = cpu_ns();
      first_ns_ = now_ns();
      last_cpu_ = first_cpu_.load();
    }
    if (++handled_ == expect_) {
      const std::int64_t last_ns = now_ns();
      report(last_ns, cpu_ns());
    } else if (report_at_exit_) {
      last_ns_ = now_ns();
      if (last_ns_ - last_cpu_at_ >= 1000000) {
        last_cpu_ = cpu_ns();
        last_cpu_at_ = last_ns_.load();
      }
    }
    return warren::Outcome::ack();
  }

 private:
  warren::Outcome handle_in_tally() {
    if (!started_.exchange(true))
      tally_->first_message();
    if (tally_->count_reaches(expect_)) {
      const std::int64_t last_ns = now_ns();
      const auto totals = tally_->totals();
      if (std::FILE* out = std::fopen(report_file_.c_str(), "w")) {
        std::fprintf(out, "%lld %lld %lld %ld %lld %d %ld\n",
                     static_cast<long long>(totals.first_ns), static_cast<long long>(last_ns),
                     static_cast<long long>(totals.host_cpu_ns), bench::max_rss_kb(),
                     static_cast<long long>(totals.children_cpu_ns), totals.children,
                     bench::process_max_rss_kb(::getppid()));
        std::fclose(out);
      }
    }
    return warren::Outcome::ack();
  }

  void report(std::int64_t last_ns, std::int64_t last_cpu) const {
    if (std::FILE* out = std::fopen(report_file_.c_str(), "w")) {
      std::fprintf(out, "%lld %lld %lld %ld\n", static_cast<long long>(first_ns_.load()),
                   static_cast<long long>(last_ns),
                   static_cast<long long>(last_cpu - first_cpu_.load()), bench::max_rss_kb());
      std::fclose(out);
    }
  }

  const long expect_;
  const std::string report_file_;
  std::atomic<bool> started_{false};
  std::atomic<std::int64_t> first_ns_{0};
  std::atomic<std::int64_t> first_cpu_{0};
  std::atomic<long> handled_{0};
  const bool report_at_exit_;
  std::atomic<std::int64_t> last_ns_{0};
  std::atomic<std::int64_t> last_cpu_{0};
  std::atomic<std::int64_t> last_cpu_at_{0};
  std::unique_ptr<bench::SharedTally> tally_;
};

}  // namespace

WARREN_PLUGIN(Timing, BENCH_TIMING_PLUGIN_NAME, "1.0.0")
