// See terminal_escape.h.
#include "observability/terminal_escape.h"

#include <cstdio>

#include "observability/utf8.h"

namespace warren::observability {
namespace {

void append_hex(std::string& out, const char* prefix, unsigned char byte) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "%s%02x", prefix, byte);
  out += buffer;
}

}  // namespace

void append_terminal_safe(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out.push_back(text[i]);
      ++i;
    } else if (byte == '\n') {
      out += "\\n";
      ++i;
    } else if (byte == '\r') {
      out += "\\r";
      ++i;
    } else if (byte == '\t') {
      out += "\\t";
      ++i;
    } else if (byte < 0x80) {  // the other C0 controls and DEL
      append_hex(out, "\\x", byte);
      ++i;
    } else if (const std::size_t length = utf8_sequence_length(text, i); length == 0) {
      append_hex(out, "\\x", byte);
      ++i;
    } else if (byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      append_hex(out, "\\u00", static_cast<unsigned char>(text[i + 1]));  // a C1 control
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_terminal_safe(out, text);
  return out;
}

}  // namespace warren::observability
