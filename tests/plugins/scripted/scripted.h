// libscripted.so, plugin "scripted": a handler whose behaviour each test chooses per message,
// and which leaves a crash-proof trace of every call, for integration tests of the host.
//
// Settings:
//   record_file     append one line per handle() call (optional; no trace without it):
//                   worker \t message_id \t attempt \t redelivered(0|1) \t action \n
//                   written with one write(2) on an O_APPEND descriptor before the action runs,
//                   so even `abort` or a kill -9 leaves whole lines only.
//   record_time     true: each line gets a sixth field, the wall-clock time of the call in
//                   seconds since the Unix epoch with microseconds (e.g. 1712345678.123456), so
//                   tests can measure retry delays, across host restarts too (default false)
//   default_action  the action when the message has no x-test-action header (default "ack")
//   sleep_ms        sleep before every action (default 0)
//   gate_file       before every action (after the record line and sleep_ms), wait until this
//                   file exists, checking every 10 ms; after 10 minutes, throw (a retry). A test
//                   holds a call in flight with it, sees the record line (the call has begun),
//                   does what it must while the call runs, then creates the file: an event, not
//                   a sleep that a busy machine can outlast.
//   init_action     segfault | abort | throw: the constructor (the plugin's init) crashes or
//                   throws, after the other settings are checked (the "crashes in init" fault)
//   crash_every     N >= 1: every Nth handle() call of this instance segfaults, after its record
//                   line and before its action; counted per instance, so a restarted worker
//                   process counts from 0 (the "crashes on every tenth message" fault, N = 10)
// Actions: see scripted_action.h.
// Each call counts in warren_plugin_scripted_actions_total{action} (the action's name, e.g.
// "notify") and logs "scripted: <action>" at debug.
#pragma once

#include <warren/sdk.h>

#include <chrono>
#include <string>

#include "faults.h"
#include "scripted_action.h"

namespace warren::test_plugins {

inline constexpr std::string_view kActionHeader = "x-test-action";

class Scripted final : public warren::Handler {
 public:
  // Throws std::invalid_argument on an invalid default_action, sleep_ms, init_action or
  // crash_every, std::runtime_error for init_action = throw, and
  // std::system_error when record_file cannot be opened.
  explicit Scripted(warren::PluginContext& ctx);
  ~Scripted() override;
  Scripted(const Scripted&) = delete;
  Scripted& operator=(const Scripted&) = delete;

  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override;

 private:
  void record(const warren::Message& msg, std::string_view action) const;

  std::string worker_;
  std::string default_action_;
  std::chrono::milliseconds sleep_{0};
  std::string gate_file_;
  int record_fd_ = -1;
  bool record_time_ = false;
  CrashSchedule crash_schedule_;
  warren::LabelledCounter actions_;
};

}  // namespace warren::test_plugins
