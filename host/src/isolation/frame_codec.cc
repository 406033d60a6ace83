#include "isolation/frame_codec.h"

#include <bit>
#include <cstring>
#include <limits>

namespace warren::isolation {

namespace {

template <typename Unsigned>
void append_little_endian(std::string& out, Unsigned value) {
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename Unsigned>
Unsigned read_little_endian(std::string_view bytes) {
  Unsigned value = 0;
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i)
    value |= static_cast<Unsigned>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return value;
}

}  // namespace

void FrameWriter::u32(std::uint32_t value) {
  append_little_endian(*out_, value);
}

void FrameWriter::u64(std::uint64_t value) {
  append_little_endian(*out_, value);
}

void FrameWriter::f64(double value) {
  u64(std::bit_cast<std::uint64_t>(value));
}

void FrameWriter::bytes(std::string_view value) {
  if (value.size() > std::numeric_limits<std::uint32_t>::max())
    throw FrameError("a field of " + std::to_string(value.size()) + " bytes does not fit a frame");
  u32(static_cast<std::uint32_t>(value.size()));
  out_->append(value);
}

std::string_view FrameReader::take(std::size_t size, const char* what) {
  if (size > input_.size())
    throw FrameError(std::string("truncated frame: ") + what + " needs " + std::to_string(size) +
                     " bytes, " + std::to_string(input_.size()) + " left");
  std::string_view taken = input_.substr(0, size);
  input_.remove_prefix(size);
  return taken;
}

std::uint8_t FrameReader::u8(const char* what) {
  return static_cast<std::uint8_t>(take(1, what)[0]);
}

std::uint32_t FrameReader::u32(const char* what) {
  return read_little_endian<std::uint32_t>(take(4, what));
}

std::uint64_t FrameReader::u64(const char* what) {
  return read_little_endian<std::uint64_t>(take(8, what));
}

double FrameReader::f64(const char* what) {
  return std::bit_cast<double>(u64(what));
}

std::string_view FrameReader::bytes_view(const char* what) {
  std::uint32_t size = u32(what);
  return take(size, what);
}

std::uint32_t FrameReader::count(const char* what, std::size_t min_element_size) {
  std::uint32_t value = u32(what);
  if (min_element_size > 0 && value > input_.size() / min_element_size)
    throw FrameError(std::string("frame claims ") + std::to_string(value) + " " + what +
                     ", more than its " + std::to_string(input_.size()) + " remaining bytes hold");
  return value;
}

void FrameReader::expect_end(const char* frame) const {
  if (!input_.empty())
    throw FrameError(std::string(frame) + " frame has " + std::to_string(input_.size()) +
                     " bytes past its end");
}

}  // namespace warren::isolation
