// Scope objects for tests of the scope rules (host_abi/message_scope.h): a heap string naming
// itself, whose destroy function records its name, so a test sees which scopes died and in which
// order. Single-threaded; a test clears destroyed_scopes first.
#pragma once

#include <string>
#include <vector>

namespace warren::plugin::testing {

inline std::vector<std::string> destroyed_scopes;

inline void destroy_named_scope(void* scope) {
  auto* name = static_cast<std::string*>(scope);
  destroyed_scopes.push_back(*name);
  delete name;
}

}  // namespace warren::plugin::testing
