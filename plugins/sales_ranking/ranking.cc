// Ranking: counting, undoing, ordering, and its JSON form.
#include "ranking.h"

#include <algorithm>
#include <stdexcept>

namespace livraria {

bool Ranking::apply(const OrderPlaced& order) {
  if (!counted_events_.insert(order.event_id).second)
    return false;
  for (const SoldItem& item : order.items)
    quantity_by_product_[item.product_id] += item.quantity;
  return true;
}

void Ranking::undo(const OrderPlaced& order) {
  if (counted_events_.erase(order.event_id) == 0)
    return;
  for (const SoldItem& item : order.items) {
    const auto it = quantity_by_product_.find(item.product_id);
    if (it == quantity_by_product_.end())
      continue;
    it->second -= item.quantity;
    if (it->second <= 0)
      quantity_by_product_.erase(it);
  }
}

std::int64_t Ranking::quantity_of(std::int64_t product_id) const {
  const auto it = quantity_by_product_.find(product_id);
  return it == quantity_by_product_.end() ? 0 : it->second;
}

std::vector<ProductSales> Ranking::top(std::size_t count) const {
  std::vector<ProductSales> sales;
  sales.reserve(quantity_by_product_.size());
  for (const auto& [product_id, quantity] : quantity_by_product_) {
    sales.push_back(ProductSales{product_id, quantity});
  }
  const auto best_first = [](const ProductSales& a, const ProductSales& b) {
    return a.quantity != b.quantity ? a.quantity > b.quantity : a.product_id < b.product_id;
  };
  const std::size_t shown = std::min(count, sales.size());
  std::partial_sort(sales.begin(), sales.begin() + static_cast<std::ptrdiff_t>(shown), sales.end(),
                    best_first);
  sales.resize(shown);
  return sales;
}

nlohmann::json Ranking::to_json() const {
  nlohmann::json sales = nlohmann::json::array();
  for (const auto& [product_id, quantity] : quantity_by_product_) {
    sales.push_back({{"product_id", product_id}, {"quantity", quantity}});
  }
  return {{"format", 1}, {"sales", std::move(sales)}, {"counted_events", counted_events_}};
}

Ranking Ranking::from_json(const nlohmann::json& state) {
  if (!state.is_object() || state.value("format", 0) != 1) {
    throw std::invalid_argument("it is not a format-1 ranking ({\"format\": 1, ...})");
  }
  Ranking ranking;
  const auto sales = state.find("sales");
  const auto events = state.find("counted_events");
  if (sales == state.end() || !sales->is_array()) {
    throw std::invalid_argument("'sales' is missing or not an array");
  }
  if (events == state.end() || !events->is_array()) {
    throw std::invalid_argument("'counted_events' is missing or not an array");
  }
  for (const auto& entry : *sales) {
    const auto product = entry.find("product_id");
    const auto quantity = entry.find("quantity");
    if (!entry.is_object() || product == entry.end() || quantity == entry.end() ||
        !product->is_number_integer() || !quantity->is_number_integer() ||
        quantity->get<std::int64_t>() < 1) {
      throw std::invalid_argument("'sales' holds an invalid entry " + entry.dump());
    }
    ranking.quantity_by_product_[product->get<std::int64_t>()] += quantity->get<std::int64_t>();
  }
  for (const auto& event : *events) {
    if (!event.is_string()) {
      throw std::invalid_argument("'counted_events' holds a non-string " + event.dump());
    }
    ranking.counted_events_.insert(event.get<std::string>());
  }
  return ranking;
}

}  // namespace livraria
