// The object a plugin attaches to one message (abi.h's message_set_scope; the SDK's Scope): the
// host and the harness hold it in a MessageScope, so they replace and destroy it the same way.
// Replacing it destroys the previous object at once (unless it is the same one); settling the
// message, or destroying the MessageScope, destroys the current one. Not thread-safe: a message
// is handled by one thread at a time.
#pragma once

#include "warren/abi.h"

namespace warren::host_abi {

class MessageScope {
 public:
  MessageScope() = default;
  ~MessageScope() { settle(); }
  MessageScope(const MessageScope&) = delete;
  MessageScope& operator=(const MessageScope&) = delete;

  void* get() const noexcept { return scope_; }
  // Whether an object is attached (its destroy function runs at settlement).
  bool holds() const noexcept { return scope_ != nullptr; }

  void set(void* scope, warren_scope_destroy_fn destroy) noexcept {
    if (scope_ != nullptr && scope_ != scope && destroy_ != nullptr)
      destroy_(scope_);
    scope_ = scope;
    destroy_ = destroy;
  }

  // The message is settled: what the plugin attached dies now.
  void settle() noexcept {
    void* dying = scope_;
    const warren_scope_destroy_fn destroy = destroy_;
    scope_ = nullptr;
    destroy_ = nullptr;
    if (dying != nullptr && destroy != nullptr)
      destroy(dying);
  }

 private:
  void* scope_ = nullptr;
  warren_scope_destroy_fn destroy_ = nullptr;
};

}  // namespace warren::host_abi
