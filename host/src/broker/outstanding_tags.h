// The delivery tags of one channel that are delivered and not yet settled, in order. The ledger
// touches it twice for every message on the I/O thread, so it allocates nothing in the steady
// state: a channel numbers its deliveries upwards, so the tags are kept sorted in one vector
// whose live part starts at `head_`. Settling the oldest (the usual case) only moves `head_`;
// settling one a little later moves the few tags before it up by one. Its size is bounded by
// the prefetch (the broker sends no more than that unacked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace warren::broker {

class OutstandingTags {
 public:
  // A tag below one already held (not sent by a broker within one channel incarnation) still
  // goes in its place.
  void add(std::uint64_t tag);
  // False when `tag` is not outstanding (never delivered, or settled before).
  bool remove(std::uint64_t tag);
  // The oldest tag still outstanding.
  std::optional<std::uint64_t> oldest() const noexcept;
  std::size_t size() const noexcept { return tags_.size() - head_; }
  bool empty() const noexcept { return size() == 0; }
  void clear() noexcept;

 private:
  std::vector<std::uint64_t> tags_;  // sorted; [head_, end) are outstanding
  std::size_t head_ = 0;
};

}  // namespace warren::broker
