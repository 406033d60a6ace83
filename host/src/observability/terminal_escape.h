// Text from messages (ids, headers, reasons, routing keys) made safe to print on a terminal or
// in a text log line: whoever can publish a message must not be able to send escape sequences
// to the operator's terminal (ANSI colours, OSC window titles, clearing the screen) or forge a
// line of output with a newline.
#pragma once

#include <string>
#include <string_view>

namespace warren::observability {

// Appends `text` with every byte a terminal acts on escaped, visibly and reversibly enough to
// read: "\n", "\r", "\t", other C0 controls and DEL as "\xHH"; the C1 controls written in UTF-8
// (U+0080..U+009F, among them the one-character CSI) as "\u00HH"; bytes that are not valid UTF-8
// as "\xHH" (a terminal in an 8-bit mode reads 0x9B as CSI). Printable ASCII and valid UTF-8 are
// kept, backslashes included (no newline can be forged with them).
void append_terminal_safe(std::string& out, std::string_view text);

// The same, as a new string.
std::string terminal_safe(std::string_view text);

}  // namespace warren::observability
