// Storage a thread keeps from one use to the next: what the last owner left, for the next
// to build in (a graph's per-op vectors, a run's timing), so that run after run writes into
// memory the process already holds instead of faulting fresh pages in (ADR 0026).
#pragma once

namespace kb {

// One T per thread and per T. get() is null once the thread's T has been destroyed (a
// holder destroyed while the thread ends then keeps its own storage and frees it).
template <class T>
class ThreadSpare {
 public:
  static T* get() {
    if (gone()) return nullptr;
    thread_local Holder h;
    return &h.value;
  }

 private:
  struct Holder {
    T value;
    ~Holder() { gone() = true; }
  };
  // Trivially destructible: still readable while the thread ends.
  static bool& gone() {
    thread_local bool g = false;
    return g;
  }
};

}  // namespace kb
