// Plain-text output of the status verbs (`warren outbox status`, `warren queue status`): columns
// aligned as `column -t` would, and ages and sizes a person reads at a glance.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace warren::cli {

// Each row's cells, padded to the widest cell of its column plus two spaces; the last cell of a
// row is not padded.
void print_aligned(std::ostream& out, const std::vector<std::vector<std::string>>& rows);

// "4.2s", "3.5m", "2.0h"; "-" when there is no age.
std::string format_age(const std::optional<double>& seconds);

// "812 B", "7.9 KiB", "3.4 MiB", "1.2 GiB".
std::string format_size(std::uintmax_t bytes);

}  // namespace warren::cli
