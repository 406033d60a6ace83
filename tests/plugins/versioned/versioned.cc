// libversioned.so, plugin "versioned": acks every message and records which build handled it,
// for the reload tests (a plugin file replaced under a running host). Built twice from this one
// source, as versioned_v1/libversioned.so and versioned_v2/libversioned.so, differing only in
// WARREN_TEST_PLUGIN_VERSION.
//
// Settings:
//   record_file  append one line per handle() call: worker \t message_id \t version \n, written
//                with one write(2) on an O_APPEND descriptor (whole lines only, even on a kill)
//   fail_init    "true": the constructor throws (a plugin failing init)
#include <fcntl.h>
#include <unistd.h>

#include <warren/sdk.h>
#include <stdexcept>
#include <string>

#ifndef WARREN_TEST_PLUGIN_VERSION
#error "build with -DWARREN_TEST_PLUGIN_VERSION=\"...\""
#endif

namespace {

class Versioned final : public warren::Handler {
 public:
  explicit Versioned(warren::PluginContext& ctx) : worker_(ctx.worker_name()) {
    if (ctx.setting("fail_init").value_or("") == "true")
      throw std::runtime_error("fail_init is set");
    if (const auto file = ctx.setting("record_file")) {
      fd_ = ::open(file->c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
      if (fd_ < 0)
        throw std::runtime_error("cannot open record_file " + *file);
    }
  }
  ~Versioned() override {
    if (fd_ >= 0)
      ::close(fd_);
  }
  Versioned(const Versioned&) = delete;
  Versioned& operator=(const Versioned&) = delete;

  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    if (fd_ >= 0) {
      const std::string line =
          worker_ + "\t" + std::string(msg.message_id()) + "\t" + WARREN_TEST_PLUGIN_VERSION + "\n";
      if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        return warren::Outcome::retry();  // the record is the test's evidence: try again
    }
    return warren::Outcome::ack();
  }

 private:
  std::string worker_;
  int fd_ = -1;
};

}  // namespace

WARREN_PLUGIN(Versioned, "versioned", WARREN_TEST_PLUGIN_VERSION)
