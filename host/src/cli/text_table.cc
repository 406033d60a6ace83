// See text_table.h.
#include "cli/text_table.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace warren::cli {

void print_aligned(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& cells : rows) {
    widths.resize(std::max(widths.size(), cells.size()), 0);
    for (std::size_t i = 0; i < cells.size(); ++i)
      widths[i] = std::max(widths[i], cells[i].size());
  }
  for (const auto& cells : rows) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out << cells[i];
      if (i + 1 < cells.size())
        out << std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    out << '\n';
  }
}

std::string format_age(const std::optional<double>& seconds) {
  if (!seconds)
    return "-";
  char text[32];
  if (*seconds < 120)
    std::snprintf(text, sizeof(text), "%.1fs", *seconds);
  else if (*seconds < 7200)
    std::snprintf(text, sizeof(text), "%.1fm", *seconds / 60);
  else
    std::snprintf(text, sizeof(text), "%.1fh", *seconds / 3600);
  return text;
}

std::string format_size(std::uintmax_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double size = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (size >= 1024 && unit + 1 < std::size(units)) {
    size /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", size, units[unit]);
  return text;
}

}  // namespace warren::cli
