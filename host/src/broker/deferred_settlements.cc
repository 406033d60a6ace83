// See deferred_settlements.h.
#include "broker/deferred_settlements.h"

#include <algorithm>

namespace warren::broker {
namespace {

void by_due(std::vector<DeferredSettlements::Entry>& entries) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.due < b.due; });
}

}  // namespace

std::vector<DeferredSettlements::Entry> DeferredSettlements::take_due(Clock::time_point now) {
  std::vector<Entry> due;
  std::erase_if(held_, [&](const Entry& entry) {
    if (entry.due > now)
      return false;
    due.push_back(entry);
    return true;
  });
  by_due(due);
  return due;
}

std::vector<DeferredSettlements::Entry> DeferredSettlements::take_all() {
  std::vector<Entry> all = std::move(held_);
  held_.clear();
  by_due(all);
  return all;
}

}  // namespace warren::broker
