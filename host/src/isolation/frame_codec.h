// The bytes of one frame between the host and a worker process (isolation = "process"):
// little-endian fixed-width integers and length-prefixed byte strings, nothing else. Both sides
// are the same build, so the format needs no schema evolution; it needs to refuse, cleanly, what
// a crashing child or a stray writer leaves on the socket: the reader checks every length and
// count against the bytes that are left, so a truncated or hostile frame is a FrameError, never a
// read past the end nor an allocation the frame cannot back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace warren::isolation {

class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FrameWriter {
 public:
  // Room for a typical frame (a Deliver of a small message) from the start: no regrowth.
  FrameWriter() : out_(&own_) { own_.reserve(512); }
  // Appends to TARGET instead (a packet being filled: the frame is never copied); take() then
  // has nothing.
  explicit FrameWriter(std::string& target) noexcept : out_(&target) {}
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  void u8(std::uint8_t value) { out_->push_back(static_cast<char>(value)); }
  void u32(std::uint32_t value);
  void u64(std::uint64_t value);
  void f64(double value);
  // A u32 length, then the bytes. Throws FrameError past 4 GiB.
  void bytes(std::string_view value);

  std::string take() && { return std::move(own_); }

 private:
  std::string own_;
  std::string* out_;
};

class FrameReader {
 public:
  explicit FrameReader(std::string_view input) noexcept : input_(input) {}

  std::uint8_t u8(const char* what);
  std::uint32_t u32(const char* what);
  std::uint64_t u64(const char* what);
  double f64(const char* what);
  std::string bytes(const char* what) { return std::string(bytes_view(what)); }
  std::string_view bytes_view(const char* what);
  // A count of elements that take at least `min_element_size` bytes each: refused when the rest
  // of the frame could not hold that many, so a hostile count never sizes an allocation.
  std::uint32_t count(const char* what, std::size_t min_element_size);
  // Throws unless every byte was read: a frame longer than its type is as wrong as a short one.
  void expect_end(const char* frame) const;

 private:
  std::string_view take(std::size_t size, const char* what);

  std::string_view input_;
};

}  // namespace warren::isolation
