// Value lists of sweep axes as written on the command line: comma-separated items, each a
// value or a range, e.g. "8,16,32:512:*2,1024" or "64:1024:+64".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kb {

// The items of a list: "a,b,,c" with `sep` a comma is "a", "b", "", "c".
std::vector<std::string> list_items(const std::string& text, char sep);

constexpr std::int64_t kMaxAxisValues = INT64_C(1) << 20;

// Items: V, LO:HI (step 1), LO:HI:+S (arithmetic), LO:HI:*F (geometric, F >= 2); HI is
// included when a step lands on it. Values are integers in lo..hi; with `auto_value` >= 0
// the item "auto" stands for it. A value given twice is kept once, where it first appears.
// `flag` names the option in errors:
// "--tile-m 32:abc: item '32:abc': expected a non-negative integer (got 'abc')".
std::vector<std::int64_t> parse_axis_values(const std::string& flag, const std::string& text, std::int64_t lo = 0,
                                            std::int64_t hi = INT64_C(1) << 40, std::int64_t auto_value = -1);

}  // namespace kb
