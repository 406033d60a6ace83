// Fuzz target: the crash ledger file a previous run saved (runtime/crash_ledger.h): records of
// messages that crashed the host, one a line, under a CRC-32. Any content loads or is discarded
// with a reason, never a fault; each input is loaded as it is and again with its checksum line
// made right, so that the fuzzer gets past it to the records. A ledger that loads counts one more
// crash, and saves to a file that loads back to the same number of records.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "runtime/checksum.h"
#include "runtime/crash_ledger.h"

namespace {

using warren::fuzz::require;

using warren::runtime::CrashLedger;

// A directory of this process's own for the ledger file.
const std::filesystem::path& scratch_file() {
  static const std::filesystem::path file = [] {
    const auto directory = std::filesystem::temp_directory_path() /
                           ("warren-fuzz-crash-ledger-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory);
    return directory / "crash-ledger";
  }();
  return file;
}

// `content` with its last "end" line holding the CRC-32 of what comes before it.
std::string with_checksum(std::string_view content) {
  const std::size_t end_line = content.rfind("\nend\t");
  const std::string_view checked =
      end_line == std::string_view::npos ? content : content.substr(0, end_line + 1);
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", warren::runtime::crc32(checked));
  std::string out(checked);
  if (out.empty() || out.back() != '\n')
    out += '\n';
  return out + "end\t" + hex + "\n";
}

void load_and_check(const std::string& content) {
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  const auto now = CrashLedger::Clock::now();
  CrashLedger ledger(scratch_file());
  if (!ledger.load(now).empty())
    return;
  // One more crash of the first record's message (its texts taken as they are written, which is
  // the identity itself when they hold no escapes): a count read from the file goes up from there.
  const std::string_view first = std::string_view(content).substr(content.find('\n') + 1);
  std::vector<std::string_view> fields;
  for (std::size_t begin = 0; fields.size() < 6;) {
    const std::size_t end = first.find_first_of("\t\n", begin);
    fields.push_back(first.substr(begin, end - begin));
    if (end == std::string_view::npos || first[end] == '\n')
      break;
    begin = end + 1;
  }
  if (fields.size() == 6) {
    const auto identity =
        warren::runtime::CrashIdentity::from_parts(fields[3], fields[4], fields[5]);
    for (const auto& record : ledger.record_crashes({identity}, 0, now))
      require(record.crashes >= 1);
  }
  require(ledger.save().empty());
  CrashLedger again(scratch_file());
  require(again.load(now).empty());
  require(again.size() == ledger.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string content(reinterpret_cast<const char*>(data), size);
  load_and_check(content);
  load_and_check(with_checksum(content));
  return 0;
}
