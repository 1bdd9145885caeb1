// The sweep axes' value-list parser against the rule it documents, written the plain way:
// expand every item in order, keep a value where it first appears, fail on the value that
// is out of bounds or is the 2^20 + 1-th distinct one.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "host/common/error.h"
#include "host/sweep/axis_values.h"

namespace kb {
namespace {

struct Item {
  std::int64_t lo, hi, step;  // step 0: a single value
  bool geometric = false;     // LO:HI:*STEP
};

std::string name_of(const Item& it) {
  if (it.step == 0) return std::to_string(it.lo);
  return std::to_string(it.lo) + ":" + std::to_string(it.hi) + (it.geometric ? ":*" : ":+") + std::to_string(it.step);
}

// The answer, or the error's tail ("item '...': what").
std::string plain(const std::vector<Item>& items, std::int64_t lo_limit, std::int64_t hi_limit,
                  std::vector<std::int64_t>* out) {
  std::set<std::int64_t> seen;
  for (const Item& it : items) {
    const std::string name = name_of(it);
    for (std::int64_t v = it.lo; v <= (it.step == 0 ? it.lo : it.hi);
         v = it.geometric ? v * it.step : v + (it.step == 0 ? 1 : it.step)) {
      if (v < lo_limit || v > hi_limit)
        return "item '" + name + "': " + std::to_string(v) + " is outside " + std::to_string(lo_limit) + ".." +
               std::to_string(hi_limit);
      if (!seen.insert(v).second) continue;
      if (static_cast<std::int64_t>(out->size()) >= kMaxAxisValues)
        return "item '" + name + "': more than 2^20 values on one axis";
      out->push_back(v);
    }
  }
  return "";
}

std::string text_of(const std::vector<Item>& items) {
  std::string t;
  for (const Item& it : items) {
    if (!t.empty()) t += ',';
    t += name_of(it);
  }
  return t;
}

void expect_same(const std::vector<Item>& items, std::int64_t lo_limit, std::int64_t hi_limit) {
  const std::string text = text_of(items);
  std::vector<std::int64_t> want;
  const std::string want_error = plain(items, lo_limit, hi_limit, &want);
  try {
    const std::vector<std::int64_t> got = parse_axis_values("--m", text, lo_limit, hi_limit);
    EXPECT_EQ(want_error, "") << text;
    EXPECT_EQ(got, want) << text;
  } catch (const InputError& e) {
    ASSERT_NE(want_error, "") << text << ": " << e.what();
    EXPECT_EQ(std::string(e.what()), "--m " + text + ": " + want_error);
  }
}

TEST(AxisValues, OrderAndRepeats) {
  EXPECT_EQ(parse_axis_values("--m", "1:5,3,7"), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 7}));
  EXPECT_EQ(parse_axis_values("--m", "5:7,1:6"), (std::vector<std::int64_t>{5, 6, 7, 1, 2, 3, 4}));
  EXPECT_EQ(parse_axis_values("--m", "8:64:*2,16,100:101"), (std::vector<std::int64_t>{8, 16, 32, 64, 100, 101}));
  EXPECT_EQ(parse_axis_values("--m", "auto,4,auto", 1, 8, 0), (std::vector<std::int64_t>{0, 4}));
}

TEST(AxisValues, TheLimitOnDistinctValues) {
  EXPECT_EQ(parse_axis_values("--m", "0:1048575").size(), std::size_t{1} << 20);
  EXPECT_EQ(parse_axis_values("--m", "0:10,0:1048575").size(), std::size_t{1} << 20);  // repeats count once
  expect_same({{0, 10, 1}, {0, 1048576, 1}}, 0, INT64_C(1) << 40);
  expect_same({{0, 2000000, 1}}, 0, INT64_C(1) << 40);
  expect_same({{0, 2000000, 1}}, 0, 4096);  // out of bounds before the count
  expect_same({{5, 2000000, 1}}, 6, INT64_C(1) << 40);
  expect_same({{100, 100, 0}, {0, 1048575, 1}}, 0, INT64_C(1) << 40);
  expect_same({{2000000, 2000000, 0}, {0, 1048575, 1}}, 0, INT64_C(1) << 40);
}

TEST(AxisValues, RandomListsAgreeWithThePlainRule) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Item> items(1 + rng() % 12);
    const std::int64_t span = trial % 200 == 0 ? (INT64_C(1) << 21) : 200;
    for (Item& it : items) {
      it.lo = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span));
      if (rng() % 3 == 0) {
        it.hi = it.lo, it.step = 0;
      } else if (rng() % 4 == 0) {
        it.lo += 1;
        it.hi = it.lo * static_cast<std::int64_t>(1 + rng() % 1000);
        it.step = 2 + static_cast<std::int64_t>(rng() % 3);
        it.geometric = true;
      } else {
        it.hi = it.lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span));
        it.step = 1 + static_cast<std::int64_t>(rng() % 5);
      }
    }
    const std::int64_t lo_limit = static_cast<std::int64_t>(rng() % 20);
    const std::int64_t hi_limit = rng() % 2 ? INT64_C(1) << 40 : span + static_cast<std::int64_t>(rng() % 200);
    expect_same(items, lo_limit, hi_limit);
  }
}

}  // namespace
}  // namespace kb
