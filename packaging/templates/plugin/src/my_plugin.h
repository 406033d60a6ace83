// my_plugin: a Warren message handler. Start here: replace the body of handle() with your logic.
//
// Settings ([workers.settings] of the worker that runs it):
//   max_body_bytes   optional, default 65536: larger bodies are dead-lettered.
//   notify_exchange  optional: once handled, each message is announced there with the routing
//                    key "my_plugin.handled" (its body, published with confirms).
//
// Outcomes: a message is acked once handled; an empty or oversized body can never succeed, so it
// is dead-lettered at once (warren::PermanentError); anything else thrown (a failed announcement:
// warren::PublishError) is retried under the worker's retry policy.
//
// Metrics: warren_plugin_my_plugin_messages_total (messages handled).
#pragma once

#include <warren/sdk.h>

#include <cstddef>
#include <optional>
#include <string>

namespace my_plugin {

class MyPlugin final : public warren::Handler {
 public:
  // Once per worker, at start. Throws std::invalid_argument on a bad setting: the host then
  // refuses to start the worker and says why.
  explicit MyPlugin(warren::PluginContext& ctx);

  // May run on several threads at once (the worker's `concurrency`): keep it free of unguarded
  // shared mutable state.
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override;

 private:
  std::size_t max_body_bytes_;
  std::optional<std::string> notify_exchange_;
  warren::Counter messages_handled_;
};

}  // namespace my_plugin
