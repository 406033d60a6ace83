// SalesRanking: settings and state at construction; per message parse, count, save, report.
#include "sales_ranking.h"

#include <charconv>
#include <stdexcept>
#include <string>

#include "order_placed.h"

namespace livraria {
namespace {

std::filesystem::path state_file_setting(const warren::PluginContext& ctx) {
  const auto state_file = ctx.setting("state_file");
  if (!state_file || state_file->empty()) {
    throw std::invalid_argument(
        "sales_ranking: setting 'state_file' is required: the JSON file keeping the ranking "
        "across restarts, e.g. state_file = \"/var/lib/livraria/ranking.json\" under "
        "[workers.settings]");
  }
  return *state_file;
}

std::size_t positive_setting(const warren::PluginContext& ctx, const char* key,
                             std::size_t fallback) {
  const auto text = ctx.setting(key);
  if (!text)
    return fallback;
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc{} || end != text->data() + text->size() || value == 0) {
    throw std::invalid_argument(std::string("sales_ranking: setting '") + key +
                                "' must be a positive integer, got '" + *text + "'");
  }
  return value;
}

Ranking load_and_check_writable(const StateFile& file) {
  try {
    Ranking ranking = file.load();
    file.save(ranking);  // fails now, at start, rather than on the first message
    return ranking;
  } catch (const std::system_error& e) {
    throw std::invalid_argument("sales_ranking: state_file '" + file.path().string() +
                                "' cannot be written: " + e.what() +
                                "; give the worker's user write access to its directory");
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("sales_ranking: ") + e.what());
  }
}

}  // namespace

SalesRanking::SalesRanking(warren::PluginContext& ctx)
    : plugin_(ctx),
      state_file_(state_file_setting(ctx)),
      log_every_(positive_setting(ctx, "log_every", 10)),
      log_top_(positive_setting(ctx, "log_top", 5)),
      counted_(ctx.counter("ranking_events_counted_total", "Orders counted into the ranking")),
      duplicates_(ctx.counter("ranking_duplicates_total", "Duplicate order events ignored")),
      ranking_(load_and_check_writable(state_file_)) {
  ctx.log_info("sales_ranking: " + std::to_string(ranking_.events_counted()) +
               " events already counted, state in " + state_file_.path().string());
}

warren::Outcome SalesRanking::handle(const warren::Message& msg, warren::Context& ctx) {
  if (msg.routing_key() != kOrderPlacedRoutingKey) {
    ctx.log_info("sales_ranking: " + std::string(msg.routing_key()) +
                 " does not change the ranking; acked");
    return warren::Outcome::ack();
  }
  const OrderPlaced order = parse_order_placed(msg.body());  // PermanentError: dead-lettered

  std::string top_line;
  {
    const std::lock_guard lock(mutex_);
    if (!ranking_.apply(order)) {
      duplicates_.inc();
      ctx.log_info("sales_ranking: event " + order.event_id + " (order " +
                   std::to_string(order.order_id) + ") already counted; duplicate acked");
      return warren::Outcome::ack();
    }
    try {
      state_file_.save(ranking_);
    } catch (...) {
      ranking_.undo(order);  // memory never runs ahead of the file: the retry counts it again
      throw;
    }
    counted_.inc();
    if (ranking_.events_counted() % log_every_ == 0)
      top_line = describe_top();
  }
  if (!top_line.empty())
    plugin_.log_info(top_line);
  return warren::Outcome::ack();
}

std::string SalesRanking::describe_top() const {
  std::string line = "sales_ranking: top " + std::to_string(log_top_) + " after " +
                     std::to_string(ranking_.events_counted()) + " orders:";
  const char* separator = " ";
  for (const ProductSales& sales : ranking_.top(log_top_)) {
    line += separator;
    line += "product " + std::to_string(sales.product_id) + " (" + std::to_string(sales.quantity) +
            " sold)";
    separator = ", ";
  }
  return line;
}

}  // namespace livraria
