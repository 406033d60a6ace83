// JSON string escaping for log lines and CLI output (no JSON library needed for flat objects).
#pragma once

#include <string>
#include <string_view>

namespace warren::observability {

// Appends `text` as a quoted JSON string; invalid UTF-8 bytes are replaced by U+FFFD. Control
// characters (C0, DEL, C1) are written as \u escapes, so a line is safe to print on a terminal.
void append_json_string(std::string& out, std::string_view text);

}  // namespace warren::observability
