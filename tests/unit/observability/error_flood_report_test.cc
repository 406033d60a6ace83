// Issue 19 item 14: an error flood is cut to 20 lines at once, then 5 a second, per worker, and
// what was dropped is reported as "suppressed N error messages". That report used to come only
// with the next error let through: when the flood simply stopped, the operator never learnt how
// many errors were dropped. A timer reports it too, within a couple of seconds.
#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "eventually.h"
#include "observability/log.h"
#include "temp_dir.h"

namespace warren::observability {
namespace {

using namespace std::chrono_literals;

// Points file descriptor 2 (where the log goes) at a file for the life of the object, so that
// a test can read what was logged while the host goes on logging.
class StderrInFile {
 public:
  StderrInFile() : path_(dir_ / "stderr") {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int file = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(file, 2);
    ::close(file);
  }
  ~StderrInFile() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
  }
  std::string text() const {
    std::fflush(stderr);
    std::ifstream in(path_);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

 private:
  test_support::TempDir dir_;
  std::string path_;
  int saved_ = -1;
};

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

TEST(ErrorFloodReport, FloodThatStops_IsReportedOnATimerWithoutAnotherError) {
  configure_logging("info", LogFormat::text);
  StderrInFile captured;
  constexpr std::size_t kErrors = 40;
  for (std::size_t i = 0; i < kErrors; ++i)
    log(LogLevel::error, LogFields::for_worker("flood"), "handler failed: " + std::to_string(i));

  // Every error is either written or counted in a report (a report may also come mid-flood).
  const std::regex report(R"(\[flood\] suppressed (\d+) error messages)");
  std::string text;
  std::size_t accounted = 0;
  EXPECT_TRUE(test_support::eventually(
      [&] {
        text = captured.text();
        accounted = count_of(text, "handler failed: ");
        for (std::sregex_iterator it(text.begin(), text.end(), report), end; it != end; ++it)
          accounted += std::stoul((*it)[1].str());
        return accounted == kErrors;
      },
      10s))
      << "written + reported as suppressed = " << accounted << ", not " << kErrors
      << " (no \"suppressed N\" line once the flood stopped?):\n"
      << text;
  EXPECT_TRUE(std::regex_search(text, report)) << text;
}

}  // namespace
}  // namespace warren::observability
