// See crash_ledger.h. The file:
//   warren crash ledger 1
//   <crashes> TAB <last crash, ms since the epoch> TAB <signal> TAB <worker> TAB <queue> TAB <key>
//   ...
//   end TAB <CRC-32 of every byte before this line, 8 hex digits>
// Texts escape backslash, tab and newline as \\, \t and \n.
#include "runtime/crash_ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "runtime/checksum.h"

namespace warren::runtime {
namespace {

constexpr std::string_view kFirstLine = "warren crash ledger 1";
constexpr std::string_view kEndField = "end";

std::int64_t unix_ms(CrashLedger::Clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

bool expired(const CrashRecord& record, CrashLedger::Clock::time_point now) {
  const auto expiry = std::chrono::duration_cast<std::chrono::milliseconds>(CrashLedger::kExpiry);
  // Not now - last >= expiry: a ledger's time can be anything a file holds, and the difference
  // would overflow for one far in the past.
  return record.last_crash_unix_ms <= unix_ms(now) - expiry.count();
}

std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::optional<std::string> unescaped(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size())
      return std::nullopt;
    if (text[i] == '\\')
      out += '\\';
    else if (text[i] == 't')
      out += '\t';
    else if (text[i] == 'n')
      out += '\n';
    else
      return std::nullopt;
  }
  return out;
}

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> fields;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = line.find(separator, begin);
    fields.push_back(line.substr(begin, end - begin));
    if (end == std::string_view::npos)
      return fields;
    begin = end + 1;
  }
}

template <class Integer>
bool parse_integer(std::string_view text, Integer& out, int base = 10) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

std::optional<CrashRecord> parse_record(std::string_view line) {
  const std::vector<std::string_view> fields = split(line, '\t');
  if (fields.size() != 6)
    return std::nullopt;
  CrashRecord record;
  if (!parse_integer(fields[0], record.crashes) || record.crashes < 1 ||
      !parse_integer(fields[1], record.last_crash_unix_ms) ||
      !parse_integer(fields[2], record.last_signal)) {
    return std::nullopt;
  }
  const auto worker = unescaped(fields[3]);
  const auto queue = unescaped(fields[4]);
  const auto key = unescaped(fields[5]);
  if (!worker || !queue || !key)
    return std::nullopt;
  record.identity = CrashIdentity::from_parts(*worker, *queue, *key);
  return record;
}

std::string write_file(const std::filesystem::path& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return "cannot create " + path.string() + ": " + std::strerror(errno);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t wrote = ::write(fd, content.data() + done, content.size() - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote < 0) {
      const int error = errno;
      ::close(fd);
      return "cannot write " + path.string() + ": " + std::strerror(error);
    }
    done += static_cast<std::size_t>(wrote);
  }
  if (::close(fd) != 0)
    return "cannot write " + path.string() + ": " + std::strerror(errno);
  return {};
}

}  // namespace

std::string CrashLedger::load(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  records_.clear();
  count_.store(0);
  std::ifstream file(path_, std::ios::binary);
  if (!file) {
    std::error_code error;
    if (!std::filesystem::exists(path_, error) && !error)
      return {};
    return "cannot read it";
  }
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string content = buffer.str();

  const std::size_t end_line = content.rfind(std::string("\n") + std::string(kEndField) + "\t");
  if (!content.starts_with(std::string(kFirstLine) + "\n") || end_line == std::string::npos ||
      !content.ends_with("\n")) {
    return "it is not a whole crash ledger of this version (truncated, or not one)";
  }
  const std::string_view checked(content.data(), end_line + 1);
  std::uint32_t stored = 0;
  const std::string_view checksum_text(content.data() + end_line + 1 + kEndField.size() + 1,
                                       content.size() - end_line - kEndField.size() - 3);
  if (!parse_integer(checksum_text, stored, 16) || stored != crc32(checked))
    return "its checksum does not match its content";

  std::map<CrashIdentity, CrashRecord> records;
  std::string_view body = checked.substr(kFirstLine.size() + 1);  // each record ends in '\n'
  while (!body.empty()) {
    const std::size_t newline = body.find('\n');
    std::optional<CrashRecord> record = parse_record(body.substr(0, newline));
    body.remove_prefix(newline + 1);
    if (!record)
      return "a line does not read as a crash record";
    if (!expired(*record, now))
      records[record->identity] = std::move(*record);
  }
  records_ = std::move(records);
  count_.store(records_.size());
  return {};
}

std::vector<CrashRecord> CrashLedger::record_crashes(const std::vector<CrashIdentity>& identities,
                                                     int signal, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  std::vector<CrashRecord> result;
  for (const CrashIdentity& identity : identities) {
    auto [it, inserted] = records_.try_emplace(identity);
    CrashRecord& record = it->second;
    if (inserted || expired(record, now)) {
      record = CrashRecord{};
      record.identity = identity;
    }
    // A count read from the file can be at the limit already: it stays there (still over any
    // max_crashes) rather than wrapping to a negative count.
    if (record.crashes < std::numeric_limits<int>::max())
      ++record.crashes;
    record.last_crash_unix_ms = unix_ms(now);
    record.last_signal = signal;
    result.push_back(record);
  }
  count_.store(records_.size());
  return result;
}

std::optional<CrashRecord> CrashLedger::find(const CrashIdentity& identity,
                                             Clock::time_point now) const {
  if (count_.load(std::memory_order_relaxed) == 0)
    return std::nullopt;
  std::lock_guard lock(mutex_);
  const auto it = records_.find(identity);
  if (it == records_.end() || expired(it->second, now))
    return std::nullopt;
  return it->second;
}

bool CrashLedger::forget(const CrashIdentity& identity, std::string& error) {
  std::lock_guard lock(mutex_);
  if (records_.erase(identity) == 0)
    return false;
  count_.store(records_.size());
  error = save_locked();
  return true;
}

std::string CrashLedger::save() const {
  std::lock_guard lock(mutex_);
  return save_locked();
}

std::string CrashLedger::save_locked() const {
  std::error_code error;
  if (records_.empty()) {
    std::filesystem::remove(path_, error);
    return error ? "cannot remove " + path_.string() + ": " + error.message() : std::string();
  }
  std::string content = std::string(kFirstLine) + "\n";
  for (const auto& [identity, record] : records_) {
    content += std::to_string(record.crashes) + "\t" + std::to_string(record.last_crash_unix_ms) +
               "\t" + std::to_string(record.last_signal) + "\t" + escaped(identity.worker) + "\t" +
               escaped(identity.queue) + "\t" + escaped(identity.key) + "\n";
  }
  char checksum[9];
  std::snprintf(checksum, sizeof checksum, "%08x", crc32(content));
  content += std::string(kEndField) + "\t" + checksum + "\n";

  std::filesystem::path temporary = path_;
  temporary += ".tmp";
  if (std::string problem = write_file(temporary, content); !problem.empty()) {
    std::filesystem::remove(temporary, error);
    return problem;
  }
  std::filesystem::rename(temporary, path_, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return "cannot replace " + path_.string() + ": " + error.message();
  }
  return {};
}

std::size_t CrashLedger::size() const {
  return count_.load();
}

}  // namespace warren::runtime
