#include "axis_values.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unordered_set>

#include "../common/error.h"
#include "../topology/fields.h"

namespace kb {

namespace {

constexpr std::int64_t kMaxValue = INT64_C(1) << 40;

}  // namespace

std::vector<std::string> list_items(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

namespace {

// The values of one axis list as they are read: each kept where it first appears. `sorted`
// holds the kept values in order of size, but those in `pending`, the single values since the
// last merge; a range is checked against `sorted` in one walk, as both ascend, so nothing is
// hashed value by value.
class ValueList {
 public:
  ValueList(const std::string& flag, const std::string& text, std::int64_t lo_limit, std::int64_t hi_limit)
      : flag_(flag), text_(text), lo_(lo_limit), hi_(hi_limit) {}

  [[noreturn]] void fail(const std::string& item, const std::string& what) const {
    // A flag ending in '=' ("--hw pe.matrix.rows=") is followed by the list directly.
    const std::string sep = !flag_.empty() && flag_.back() == '=' ? "" : " ";
    throw InputError(flag_ + sep + text_ + ": " + (item.empty() ? "" : "item '" + item + "': ") + what);
  }
  std::int64_t number(const std::string& item, const std::string& s) const {
    std::string why;
    if (!integer_text_ok(s, false, &why)) fail(item, why);
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE || v > kMaxValue)
      fail(item, "value out of range (at most " + (hi_ < kMaxValue ? std::to_string(hi_) : std::string("2^40")) + ")");
    return static_cast<std::int64_t>(v);
  }
  // The number auto stands for is taken only as the word "auto" (a literal 0 for an axis
  // whose auto is 0 means nothing).
  void push(const std::string& item, std::int64_t v, bool is_auto = false) {
    if (!is_auto) check_bounds(item, v);
    if (std::binary_search(sorted_.begin(), sorted_.end(), v) || pending_.count(v) > 0) return;
    keep(item, v);
    pending_.insert(v);
    if (pending_.size() > 64 + sorted_.size() / 8) flush();
  }
  // LO, LO + STEP, ... up to HI: push's walk, with one pointer into `sorted`.
  void push_range(const std::string& item, std::int64_t lo, std::int64_t hi, std::int64_t step) {
    flush();
    auto at = static_cast<std::size_t>(std::lower_bound(sorted_.begin(), sorted_.end(), lo) - sorted_.begin());
    for (std::int64_t v = lo;;) {  // the check before each step keeps v <= hi, so no overflow
      check_bounds(item, v);
      while (at < sorted_.size() && sorted_[at] < v) ++at;
      if (at == sorted_.size() || sorted_[at] != v) {
        keep(item, v);
        fresh_.push_back(v);
      }
      if (v > hi - step) break;
      v += step;
    }
    merge_in(fresh_);
  }
  // An arithmetic range, by the walk that suits its length against what is kept.
  void push_arithmetic(const std::string& item, std::int64_t lo, std::int64_t hi, std::int64_t step) {
    // One range's values are distinct: when its first 2^20 + 1 are in bounds, the walk would
    // stop on the count within this item, so say so without walking.
    if ((hi - lo) / step >= kMaxAxisValues && lo >= lo_ && lo + kMaxAxisValues * step <= hi_) fail(item, kTooMany);
    // A short range goes value by value, like single values: merging it into `sorted` at
    // once would cost the size of `sorted` for each of many short ranges.
    if ((hi - lo) / step >= 64 + static_cast<std::int64_t>(sorted_.size() / 8)) return push_range(item, lo, hi, step);
    for (std::int64_t v = lo;; v += step) {  // the check before each step keeps v <= hi
      push(item, v);
      if (v > hi - step) break;
    }
  }
  void push_geometric(const std::string& item, std::int64_t lo, std::int64_t hi, std::int64_t factor) {
    for (std::int64_t v = lo;;) {  // at most 40 values; the check before each step keeps v <= hi
      push(item, v);
      if (v > hi / factor) break;
      v *= factor;
    }
  }
  std::vector<std::int64_t>& values() { return values_; }

 private:
  static constexpr const char* kTooMany = "more than 2^20 values on one axis";
  void check_bounds(const std::string& item, std::int64_t v) const {
    if (v < lo_ || v > hi_) fail(item, std::to_string(v) + " is outside " + std::to_string(lo_) + ".." + std::to_string(hi_));
  }
  void keep(const std::string& item, std::int64_t v) {
    if (static_cast<std::int64_t>(values_.size()) >= kMaxAxisValues) fail(item, kTooMany);
    values_.push_back(v);
  }
  void merge_in(std::vector<std::int64_t>& ascending) {
    const std::size_t mid = sorted_.size();
    sorted_.insert(sorted_.end(), ascending.begin(), ascending.end());
    std::inplace_merge(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(mid), sorted_.end());
    ascending.clear();
  }
  void flush() {
    fresh_.assign(pending_.begin(), pending_.end());
    pending_.clear();
    std::sort(fresh_.begin(), fresh_.end());
    merge_in(fresh_);
  }

  const std::string& flag_;
  const std::string& text_;
  std::int64_t lo_, hi_;
  std::vector<std::int64_t> values_, sorted_, fresh_;
  std::unordered_set<std::int64_t> pending_;  // merged in before a range, or past 1/8 of `sorted`
};

}  // namespace

std::vector<std::int64_t> parse_axis_values(const std::string& flag, const std::string& text, std::int64_t lo_limit,
                                            std::int64_t hi_limit, std::int64_t auto_value) {
  ValueList list(flag, text, lo_limit, hi_limit);
  if (text.empty()) list.fail("", "expected a list of values, e.g. 32,64,128 or 32:512:*2");
  for (const std::string& item : list_items(text, ',')) {
    const std::vector<std::string> f = list_items(item, ':');
    if (auto_value >= 0 && item == "auto") {
      list.push(item, auto_value, true);
      continue;
    }
    if (f.size() == 1) {
      list.push(item, list.number(item, f[0]));
      continue;
    }
    if (f.size() > 3) list.fail(item, "expected V, LO:HI, LO:HI:+STEP or LO:HI:*FACTOR");
    const std::int64_t lo = list.number(item, f[0]), hi = list.number(item, f[1]);
    if (hi < lo) list.fail(item, "the range ends before it starts");
    char op = '+';
    std::int64_t step = 1;
    if (f.size() == 3) {
      if (f[2].empty() || (f[2][0] != '+' && f[2][0] != '*')) list.fail(item, "a step is +STEP or *FACTOR (got '" + f[2] + "')");
      op = f[2][0];
      step = list.number(item, f[2].substr(1));
    }
    if (op == '+' && step < 1) list.fail(item, "the step must be >= 1");
    if (op == '*' && (step < 2 || lo < 1)) list.fail(item, "a geometric range needs FACTOR >= 2 and LO >= 1");
    if (op == '+') list.push_arithmetic(item, lo, hi, step);
    else list.push_geometric(item, lo, hi, step);
  }
  return std::move(list.values());
}

}  // namespace kb
