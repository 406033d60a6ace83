// Objects that live exactly as long as one message, like the scoped services of .NET's DI:
// created on demand during Handler::handle and destroyed, newest first, when the message is
// settled (after its last in-process attempt). Destructors must not throw.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace warren {

class Scope {
 public:
  Scope() = default;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() {
    while (!entries_.empty())
      entries_.pop_back();
  }

  // Constructs a T owned by the scope and returns it.
  template <class T, class... Args>
  T& make(Args&&... args) {
    auto holder = std::make_unique<Holder<T>>(std::forward<Args>(args)...);
    T& value = holder->value;
    entries_.push_back(std::move(holder));
    return value;
  }

  // The newest T made in this scope, or nullptr.
  template <class T>
  T* find() noexcept {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (auto* holder = dynamic_cast<Holder<T>*>(it->get()))
        return &holder->value;
    }
    return nullptr;
  }

  // The newest T in this scope, made with `args` when there is none yet.
  template <class T, class... Args>
  T& get_or_make(Args&&... args) {
    if (T* existing = find<T>())
      return *existing;
    return make<T>(std::forward<Args>(args)...);
  }

 private:
  struct Entry {
    virtual ~Entry() = default;
  };
  template <class T>
  struct Holder final : Entry {
    template <class... Args>
    explicit Holder(Args&&... args) : value(std::forward<Args>(args)...) {}
    T value;
  };

  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace warren
