// OptionalLibrary: a library that only some hosts use, opened on first use. What matters to an
// operator is the error when it cannot be: which feature needs what, and which package to install.
#include "system_library/optional_library.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace warren::system_library {
namespace {

std::string error_of(auto&& action) {
  try {
    action();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(OptionalLibrary, NotInstalled_SaysWhatNeedsItAndWhichPackageToInstall) {
  const std::string error = error_of([] {
    OptionalLibrary("libwarren-no-such-library.so.0", "The test queue", "libwarren-test0");
  });
  EXPECT_NE(error.find("The test queue needs libwarren-no-such-library.so.0 (Debian package "
                       "libwarren-test0), which cannot be loaded: "),
            std::string::npos)
      << error;
  // The loader's own reason follows.
  EXPECT_NE(error.find("cannot open shared object file"), std::string::npos) << error;
}

TEST(OptionalLibrary, AFunctionItLacks_IsNamedWithWhatThatMeans) {
  const OptionalLibrary libc("libc.so.6", "The test", "libc6");
  const std::string error =
      error_of([&] { libc.symbol("warren_no_such_function", "too old a libc"); });
  EXPECT_EQ(error, "libc.so.6 has no warren_no_such_function: too old a libc");
}

TEST(OptionalLibrary, AFunctionItHas_IsTheOneCalled) {
  const OptionalLibrary libc("libc.so.6", "The test", "libc6");
  const auto length = reinterpret_cast<decltype(&std::strlen)>(libc.symbol("strlen", "too old"));
  ASSERT_NE(length, nullptr);
  EXPECT_EQ(length("warren"), 6U);
}

}  // namespace
}  // namespace warren::system_library
