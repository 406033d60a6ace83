// The ranking itself: units sold per product, and the ids of the events already counted (what
// makes counting idempotent). Plain data, not thread-safe; SalesRanking guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "order_placed.h"

namespace livraria {

struct ProductSales {
  std::int64_t product_id = 0;
  std::int64_t quantity = 0;
  bool operator==(const ProductSales&) const = default;
};

class Ranking {
 public:
  // Counts the order's items. Returns false, changing nothing, when its event was counted before.
  bool apply(const OrderPlaced& order);
  // Exactly reverses a successful apply() of the same order (used when it could not be saved).
  void undo(const OrderPlaced& order);

  std::int64_t quantity_of(std::int64_t product_id) const;
  // The best sellers, most units first (ties: lower product id first).
  std::vector<ProductSales> top(std::size_t count) const;
  std::size_t events_counted() const noexcept { return counted_events_.size(); }

  // {"format": 1, "sales": [{"product_id": 7, "quantity": 12}, ...], "counted_events": [...]}
  nlohmann::json to_json() const;
  // Throws std::invalid_argument saying what is wrong with `state`.
  static Ranking from_json(const nlohmann::json& state);

 private:
  std::map<std::int64_t, std::int64_t> quantity_by_product_;
  std::set<std::string> counted_events_;
};

}  // namespace livraria
