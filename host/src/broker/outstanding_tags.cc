// See outstanding_tags.h.
#include "broker/outstanding_tags.h"

#include <algorithm>

namespace warren::broker {

void OutstandingTags::add(std::uint64_t tag) {
  if (tags_.size() == head_ || tags_.back() < tag) {
    tags_.push_back(tag);
    return;
  }
  const auto at =
      std::lower_bound(tags_.begin() + static_cast<std::ptrdiff_t>(head_), tags_.end(), tag);
  if (at == tags_.end() || *at != tag)
    tags_.insert(at, tag);
}

bool OutstandingTags::remove(std::uint64_t tag) {
  const auto first = tags_.begin() + static_cast<std::ptrdiff_t>(head_);
  const auto at = std::lower_bound(first, tags_.end(), tag);
  if (at == tags_.end() || *at != tag)
    return false;
  if (at - first <= tags_.end() - at) {
    // Nearer the oldest: the tags before it move up one, and the live part starts one later.
    std::move_backward(first, at, at + 1);
    ++head_;
  } else {
    tags_.erase(at);
  }
  if (head_ == tags_.size()) {
    clear();  // keeps the capacity
  } else if (head_ >= 64 && head_ * 2 >= tags_.size()) {
    // The dead front is at least as long as the live part: drop it, once in that many removals.
    tags_.erase(tags_.begin(), tags_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  return true;
}

std::optional<std::uint64_t> OutstandingTags::oldest() const noexcept {
  if (empty())
    return std::nullopt;
  return tags_[head_];
}

void OutstandingTags::clear() noexcept {
  tags_.clear();
  head_ = 0;
}

}  // namespace warren::broker
