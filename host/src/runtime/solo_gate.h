// Lets one worker's handler threads run together, except a crash suspect, which runs alone: no
// other handler of the worker runs while it does, so that if it crashes the host again the crash
// journal holds it and nothing else. Like a shared mutex (normal handlers shared, a suspect
// exclusive), but a waiting suspect goes first: handlers that arrive after it wait, so a steady
// stream of normal messages cannot starve it.
#pragma once

#include <condition_variable>
#include <mutex>

namespace warren::runtime {

class SoloGate {
 public:
  // Held while a handler runs; releases the gate when it goes.
  class Pass {
   public:
    Pass(Pass&& other) noexcept : gate_(other.gate_), alone_(other.alone_) {
      other.gate_ = nullptr;
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass();
    bool alone() const noexcept { return alone_; }

   private:
    friend class SoloGate;
    Pass(SoloGate* gate, bool alone) : gate_(gate), alone_(alone) {}
    SoloGate* gate_;
    bool alone_;
  };

  // Waits while a suspect runs or waits.
  Pass shared();
  // Waits until no other handler runs, then runs alone.
  Pass alone();

  // How many alone() calls wait for other passes to go.
  int waiting_alone() const;

 private:
  void release(bool alone) noexcept;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int shared_running_ = 0;
  int alone_waiting_ = 0;
  bool alone_running_ = false;
};

}  // namespace warren::runtime
