// See amqp_errors.h.
#include "broker/amqp_errors.h"

#include <amqp_framing.h>

#include <regex>

#include "broker/amqp_table.h"

namespace warren::broker {

std::string status_text(int status) {
  return amqp_error_string2(status);
}

bool is_server_exception(const amqp_rpc_reply_t& reply) noexcept {
  return reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION;
}

int server_reply_code(const amqp_rpc_reply_t& reply) noexcept {
  if (reply.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION || reply.reply.decoded == nullptr) {
    return 0;
  }
  switch (reply.reply.id) {
    case AMQP_CHANNEL_CLOSE_METHOD:
      return static_cast<const amqp_channel_close_t*>(reply.reply.decoded)->reply_code;
    case AMQP_CONNECTION_CLOSE_METHOD:
      return static_cast<const amqp_connection_close_t*>(reply.reply.decoded)->reply_code;
    default:
      return 0;
  }
}

std::string reply_text(const amqp_rpc_reply_t& reply) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return {};
    case AMQP_RESPONSE_NONE:
      return "missing RPC reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return status_text(reply.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (reply.reply.decoded == nullptr)
        return "server exception";
      switch (reply.reply.id) {
        case AMQP_CHANNEL_CLOSE_METHOD: {
          const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
          return "channel closed by the broker: " + string_of(close->reply_text);
        }
        case AMQP_CONNECTION_CLOSE_METHOD: {
          const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
          return "connection closed by the broker: " + string_of(close->reply_text);
        }
        default:
          return "unexpected method from the broker";
      }
  }
  return "unknown reply";
}

namespace {

// RabbitMQ writes values as "the value 'quorum' of type 'longstr'" or "none": keep 'quorum',
// and say what "none" means for the queue type.
std::string plain_value(const std::string& value, const std::string& argument) {
  static const std::regex typed(R"(the value (.*) of type '[^']*')");
  std::smatch match;
  if (std::regex_match(value, match, typed))
    return match[1];
  if (value == "none") {
    return argument == "x-queue-type" ? "none (a classic queue)" : "none (not set)";
  }
  return value;
}

}  // namespace

std::string explain_precondition_failed(std::string_view server_text) {
  static const std::regex inequivalent(
      R"(inequivalent arg '([^']+)' for (queue|exchange) '([^']*)' in vhost '([^']*)': )"
      R"(received (.*) but current is (.*))");
  const std::string text(server_text);
  std::smatch match;
  if (!std::regex_search(text, match, inequivalent))
    return text;
  const std::string argument = match[1];
  const std::string kind = match[2];
  const std::string name = match[3];
  const std::string received = plain_value(match[5], argument);
  const std::string current = plain_value(match[6], argument);
  const std::string how_to_delete = kind == "queue"
                                        ? "`rabbitmqctl delete_queue " + name + "`"
                                        : "`rabbitmqadmin delete exchange name=" + name + "`";
  return kind + " '" + name + "' already exists with " + argument + " = " + current +
         ", but the config asks for " + received + ". Make the config match what exists, or " +
         "delete the " + kind + " (" + how_to_delete + "; Warren declares it again at start, " +
         "and a deleted queue's messages are lost)";
}

std::string explain_channel_close(std::string_view server_text) {
  std::string text(server_text);
  if (text.find("delivery acknowledgement") == std::string::npos ||
      text.find("timed out") == std::string::npos)
    return text;
  return text +
         ". A handler of this worker held a delivery longer than the broker's consumer_timeout: "
         "a configuration mistake, not a broker failure. Raise consumer_timeout on the broker "
         "(rabbitmq.conf, and [broker] consumer_timeout to match) above the longest handler "
         "call, or make the handler faster; set the worker's max_handler_time to what a call "
         "takes and `warren check` compares it with consumer_timeout";
}

}  // namespace warren::broker
