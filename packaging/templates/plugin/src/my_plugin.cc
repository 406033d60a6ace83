// See my_plugin.h.
#include "my_plugin.h"

#include <charconv>
#include <stdexcept>
#include <string>

namespace my_plugin {
namespace {

constexpr std::size_t kDefaultMaxBodyBytes = 65536;

std::size_t read_max_body_bytes(const warren::PluginContext& ctx) {
  const auto text = ctx.setting("max_body_bytes");
  if (!text)
    return kDefaultMaxBodyBytes;
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size() || value == 0) {
    throw std::invalid_argument("setting max_body_bytes must be a positive integer, got \"" +
                                *text + "\"");
  }
  return value;
}

}  // namespace

MyPlugin::MyPlugin(warren::PluginContext& ctx)
    : max_body_bytes_(read_max_body_bytes(ctx)),
      notify_exchange_(ctx.setting("notify_exchange")),
      messages_handled_(ctx.counter("my_plugin_messages_total", "Messages handled by my_plugin")) {
  ctx.log_info("my_plugin ready for worker " + std::string(ctx.worker_name()));
}

warren::Outcome MyPlugin::handle(const warren::Message& msg, warren::Context& ctx) {
  if (msg.body().empty()) {
    throw warren::PermanentError("empty body: nothing to handle");
  }
  if (msg.body().size() > max_body_bytes_) {
    throw warren::PermanentError("body of " + std::to_string(msg.body().size()) +
                                 " bytes exceeds max_body_bytes (" +
                                 std::to_string(max_body_bytes_) + ")");
  }
  // Your logic goes here. Make it idempotent: the same message may be delivered again.
  if (notify_exchange_) {
    // Throws warren::PublishError when the broker does not confirm it (no queue bound, no such
    // exchange): the message is retried, and the handler runs again.
    ctx.publish(*notify_exchange_, "my_plugin.handled", msg.body());
  }
  ctx.log_info("handled message " + std::string(msg.message_id()) + " (" +
               std::to_string(msg.body().size()) + " bytes, routing key " +
               std::string(msg.routing_key()) + ")");
  messages_handled_.inc();
  return warren::Outcome::ack();
}

}  // namespace my_plugin
