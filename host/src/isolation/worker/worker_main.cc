// warren-worker: the process a worker with isolation = "process" runs its plugin in. The host
// spawns it (isolation/worker_spawn.h) with its socket at descriptor 3 and the host's pid and
// its limits as arguments (isolation/worker_arguments.h); it applies the limits
// (worker/resource_limits.h), loads the plugin the host holds for it at descriptor 4 (checking
// the name the Start frame gives), says Hello, runs the plugin's
// constructor (its init), says Ready or InitFailed, then handles one Deliver at a time, in
// order, answering each with its Outcome, until Shutdown or until the host is gone. Whatever
// kills it (a segfault, abort(), the OOM killer) kills only it: the host sees the end of the
// stream and the pidfd, and names the reason.
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "isolation/worker/parent_link.h"
#include "isolation/worker/remote_services.h"
#include "isolation/worker/resource_limits.h"
#include "isolation/worker_arguments.h"
#include "isolation/worker_exit_codes.h"
#include "isolation/worker_spawn.h"
#include "plugin/handler_instance.h"
#include "plugin/plugin_library.h"

namespace {

using namespace warren;
using namespace warren::isolation;

warren_str abi(const std::string& text) {
  return warren_str{text.data(), text.size()};
}

// Dies with the host: a host killed with SIGKILL leaves no worker behind. If the host is
// already gone (its pid is no longer our parent), exit now: the signal would never come.
bool follow_the_host(pid_t host) {
  // Started through /proc/self/fd/N, the process is named "N" in ps and top: name it.
  ::prctl(PR_SET_NAME, "warren-worker");
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    return false;
  return ::getppid() == host;
}

int handle_messages(ParentLink& link, plugin::HandlerInstance& instance) {
  while (auto work = link.next_work()) {
    if (std::holds_alternative<Shutdown>(*work))
      return 0;
    const auto* message = std::get_if<Deliver>(&*work);
    if (message == nullptr) {
      std::fprintf(stderr, "warren-worker: unexpected %s frame from the host\n",
                   std::string(frame_name(*work)).c_str());
      return kExitUsage;
    }
    warren_message view{};
    view.struct_size = sizeof(view);
    view.body = abi(message->body);
    view.routing_key = abi(message->routing_key);
    view.exchange = abi(message->exchange);
    view.message_id = abi(message->message_id);
    view.content_type = abi(message->content_type);
    view.attempt = message->attempt;
    view.redelivered = message->redelivered ? 1 : 0;
    host_abi::ReportedOutcome outcome;
    const auto began = std::chrono::steady_clock::now();
    {
      RemoteMessageServices services(link, *message);
      instance.handle(view, services);
      outcome = services.take_outcome();
    }  // the scope is destroyed before the host hears the outcome, as in the host
    if (!link.finish_run(*message, std::move(outcome), std::chrono::steady_clock::now() - began))
      return 0;
  }
  return 0;  // the host is gone
}

}  // namespace

int main(int argc, char** argv) {
  std::string usage_error;
  auto arguments = WorkerArguments::parse(argc, argv, usage_error);
  if (!arguments) {
    std::fprintf(stderr,
                 "warren-worker: %s\nusage: warren-worker HOST_PID [--memory-max=BYTES] "
                 "[--core-dumps] (started by `warren run` for a worker with isolation = "
                 "\"process\", not by hand)\n",
                 usage_error.c_str());
    return kExitUsage;
  }
  if (!follow_the_host(arguments->host))
    return 0;

  ParentLink link{FrameSocket(kChildSocketFd)};
  auto first = link.receive_first(std::chrono::seconds(30));
  const Start* start = first ? std::get_if<Start>(&*first) : nullptr;
  if (start == nullptr) {
    std::fprintf(stderr, "warren-worker: no Start frame from the host\n");
    return kExitNoStart;
  }
  if (start->protocol != kProtocolVersion) {
    link.send(InitFailed{"warren-worker speaks protocol " + std::to_string(kProtocolVersion) +
                         ", the host " + std::to_string(start->protocol) +
                         ": the host and warren-worker come from different packages"});
    return kExitNoStart;
  }
  link.start_reader();
  // Before the plugin is loaded: a plugin's own handlers, if it installs any, come after ours.
  link.flush_on_fatal_signals();

  // Before the plugin's code is mapped or run: its static initialisers are under the limits too.
  if (std::string refused = apply_resource_limits(*arguments); !refused.empty()) {
    link.send(InitFailed{"warren-worker cannot apply its limits: " + refused});
    return kExitInitFailed;
  }
  std::shared_ptr<plugin::PluginLibrary> library;
  try {
    // The bytes the host checked and read, whatever the file on disk holds now; the host's
    // path in every message.
    library = plugin::PluginLibrary::load_held(start->plugin_path, start->plugin_name,
                                               "/proc/self/fd/" + std::to_string(kChildPluginFd));
  } catch (const std::exception& error) {
    link.send(InitFailed{error.what()});
    return kExitInitFailed;
  }
  const plugin::PluginInfo& info = library->info();
  if (!link.send(Hello{kProtocolVersion, info.abi_major, info.abi_minor, info.name, info.version}))
    return 0;

  RemoteWorkerServices services(link, *start);
  std::optional<plugin::HandlerInstance> instance;
  try {
    instance.emplace(library, services);
  } catch (const std::exception& error) {
    link.send(InitFailed{error.what()});
    return kExitInitFailed;
  }
  if (!link.send(Ready{}))
    return 0;
  return handle_messages(link, *instance);
}
