// The reference engine's event queue: events ordered by (time, priority, insertion
// sequence), for a simulation whose clock never goes back.
//
// Most events are scheduled at or after the event being handled, so the queue is a radix
// heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) on a 64-bit key, the time above the
// priority: bucket 0 holds the events whose key equals the last key taken, bucket i those
// whose key first differs from it in bit i - 1 counted from the bottom. Every event of one
// key in the buckets sits in one bucket, in the order it was pushed (a bucket is emptied
// into lower ones in order), so equal keys leave first in, first out: the insertion
// sequence needs no bits of its own. An event scheduled below the last key taken (at the
// same instant, at a lower priority: a zero-time op started by a release, a head or an
// arbitration round completes at that instant) waits in a small binary heap, ordered by
// key and then push order, that is always emptied first: everything in it is below
// everything in the buckets, and the last key taken changes only once it is empty.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace kb::engine {

class EventQueue {
 public:
  using Key = std::uint64_t;
  struct Item {
    Item() = default;
    Item(Key k, std::int32_t o) : key(k), op(o) {}
    Key key;
    std::int32_t op;
  };

  bool empty() const { return size_ == 0 && late_.empty(); }
  void clear() {
    for (auto& b : buckets_) b.clear();
    late_.clear();
    head_ = 0, size_ = 0, last_ = 0, late_seq_ = 0, full_ = 0;
  }
  void push(Key key, std::int32_t op) {
    if (key < last_) {
      Late& l = late_.emplace_back();
      l.key = key, l.seq = late_seq_++, l.op = op;
      std::push_heap(late_.begin(), late_.end(), std::greater<Late>{});
      return;
    }
    place(key, op);
    ++size_;
  }
  // The least event (empty(): undefined).
  Item pop() {
    if (!late_.empty()) {
      std::pop_heap(late_.begin(), late_.end(), std::greater<Late>{});
      const Late l = late_.back();
      late_.pop_back();
      return Item{l.key, l.op};
    }
    std::vector<Item>& b0 = buckets_[0];
    --size_;
    if (head_ == b0.size()) {
      b0.clear();
      head_ = 0;
      const std::size_t i = 1 + static_cast<std::size_t>(__builtin_ctzll(full_));  // the lowest non-empty
      std::vector<Item>& from = buckets_[i];
      full_ &= full_ - 1;
      if (from.size() == 1) {  // half of the buckets emptied hold one event: it is the least
        const Item it = from[0];
        from.clear();
        last_ = it.key;
        return it;
      }
      Key least = from[0].key;
      for (const Item& it : from) least = std::min(least, it.key);
      last_ = least;
      for (const Item& it : from) place(it.key, it.op);  // each lands below i
      from.clear();
    }
    return b0[head_++];
  }

 private:
  struct Late {
    Key key;
    std::uint64_t seq;
    std::int32_t op;
    bool operator>(const Late& o) const { return key != o.key ? key > o.key : seq > o.seq; }
  };
  // Built in its slot: an Item built on the stack and copied is read back as one 16-byte
  // word over the two narrower stores just made (store forwarding fails).
  void place(Key key, std::int32_t op) {
    std::size_t b = 0;
    if (key != last_) {
      const int bit = 63 - __builtin_clzll(key ^ last_);  // bucket bit + 1
      b = static_cast<std::size_t>(bit) + 1;
      full_ |= Key{1} << bit;
    }
    buckets_[b].emplace_back(key, op);
  }

  std::array<std::vector<Item>, 65> buckets_;
  std::size_t head_ = 0;  // bucket 0's next event
  std::size_t size_ = 0;  // events in the buckets
  Key last_ = 0;          // the last key taken from the buckets
  Key full_ = 0;          // bit i: bucket i + 1 is not empty
  std::vector<Late> late_;
  std::uint64_t late_seq_ = 0;
};

}  // namespace kb::engine
