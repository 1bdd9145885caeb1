#include "axis_values.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unordered_set>

#include "../common/error.h"

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

std::vector<std::int64_t> parse_axis_values(const std::string& flag, const std::string& text, std::int64_t lo_limit,
                                            std::int64_t hi_limit, std::int64_t auto_value) {
  auto fail = [&](const std::string& item, const std::string& what) {
    // A flag ending in '=' ("--hw pe.matrix.rows=") is followed by the list directly.
    const std::string sep = !flag.empty() && flag.back() == '=' ? "" : " ";
    throw InputError(flag + sep + text + ": " + (item.empty() ? "" : "item '" + item + "': ") + what);
  };
  auto number = [&](const std::string& item, const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
      fail(item, "expected a non-negative integer (got '" + s + "')");
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE || v > kMaxValue)
      fail(item, "value out of range (at most " + (hi_limit < kMaxValue ? std::to_string(hi_limit) : std::string("2^40")) + ")");
    return static_cast<std::int64_t>(v);
  };
  if (text.empty()) fail("", "expected a list of values, e.g. 32,64,128 or 32:512:*2");
  std::vector<std::int64_t> values;
  // A value is kept where it first appears. `sorted` holds the kept values in order of size,
  // but those in `pending`, the single values since the last merge; a range is checked
  // against `sorted` in one walk, as both ascend, so nothing is hashed value by value.
  std::vector<std::int64_t> sorted, fresh;
  std::unordered_set<std::int64_t> pending;  // merged in before a range, or past 1/8 of `sorted`
  const char* too_many = "more than 2^20 values on one axis";
  // The number auto stands for is taken only as the word "auto" (a literal 0 for an axis
  // whose auto is 0 means nothing).
  auto check_bounds = [&](const std::string& item, std::int64_t v, bool is_auto = false) {
    if (!is_auto && (v < lo_limit || v > hi_limit))
      fail(item, std::to_string(v) + " is outside " + std::to_string(lo_limit) + ".." + std::to_string(hi_limit));
  };
  auto keep = [&](const std::string& item, std::int64_t v) {
    if (static_cast<std::int64_t>(values.size()) >= kMaxAxisValues) fail(item, too_many);
    values.push_back(v);
  };
  auto merge_in = [&](std::vector<std::int64_t>& ascending) {
    const std::size_t mid = sorted.size();
    sorted.insert(sorted.end(), ascending.begin(), ascending.end());
    std::inplace_merge(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(mid), sorted.end());
    ascending.clear();
  };
  auto flush = [&] {
    fresh.assign(pending.begin(), pending.end());
    pending.clear();
    std::sort(fresh.begin(), fresh.end());
    merge_in(fresh);
  };
  auto push = [&](const std::string& item, std::int64_t v, bool is_auto = false) {
    check_bounds(item, v, is_auto);
    if (std::binary_search(sorted.begin(), sorted.end(), v) || pending.count(v) > 0) return;
    keep(item, v);
    pending.insert(v);
    if (pending.size() > 64 + sorted.size() / 8) flush();
  };
  // LO, LO + STEP, ... up to HI: push's walk, with one pointer into `sorted`.
  auto push_range = [&](const std::string& item, std::int64_t lo, std::int64_t hi, std::int64_t step) {
    flush();
    auto at = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), lo) - sorted.begin());
    for (std::int64_t v = lo;;) {  // the check before each step keeps v <= hi, so no overflow
      check_bounds(item, v);
      while (at < sorted.size() && sorted[at] < v) ++at;
      if (at == sorted.size() || sorted[at] != v) {
        keep(item, v);
        fresh.push_back(v);
      }
      if (v > hi - step) break;
      v += step;
    }
    merge_in(fresh);
  };
  for (const std::string& item : list_items(text, ',')) {
    const std::vector<std::string> f = list_items(item, ':');
    if (auto_value >= 0 && item == "auto") {
      push(item, auto_value, true);
      continue;
    }
    if (f.size() == 1) {
      push(item, number(item, f[0]));
      continue;
    }
    if (f.size() > 3) fail(item, "expected V, LO:HI, LO:HI:+STEP or LO:HI:*FACTOR");
    const std::int64_t lo = number(item, f[0]), hi = number(item, f[1]);
    if (hi < lo) fail(item, "the range ends before it starts");
    char op = '+';
    std::int64_t step = 1;
    if (f.size() == 3) {
      if (f[2].empty() || (f[2][0] != '+' && f[2][0] != '*')) fail(item, "a step is +STEP or *FACTOR (got '" + f[2] + "')");
      op = f[2][0];
      step = number(item, f[2].substr(1));
    }
    if (op == '+' && step < 1) fail(item, "the step must be >= 1");
    if (op == '*' && (step < 2 || lo < 1)) fail(item, "a geometric range needs FACTOR >= 2 and LO >= 1");
    // One range's values are distinct: when its first 2^20 + 1 are in bounds, the walk would
    // stop on the count within this item, so say so without walking.
    if (op == '+' && (hi - lo) / step >= kMaxAxisValues && lo >= lo_limit && lo + kMaxAxisValues * step <= hi_limit)
      fail(item, too_many);
    // A short range goes value by value, like single values: merging it into `sorted` at
    // once would cost the size of `sorted` for each of many short ranges.
    if (op == '+' && (hi - lo) / step >= 64 + static_cast<std::int64_t>(sorted.size() / 8)) {
      push_range(item, lo, hi, step);
      continue;
    }
    if (op == '+') {
      for (std::int64_t v = lo;; v += step) {  // the check before each step keeps v <= hi
        push(item, v);
        if (v > hi - step) break;
      }
      continue;
    }
    for (std::int64_t v = lo;;) {  // at most 40 values; the check before each step keeps v <= hi
      push(item, v);
      if (v > hi / step) break;
      v *= step;
    }
  }
  return values;
}

}  // namespace kb
