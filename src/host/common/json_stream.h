// Writing a JSON document too large to hold whole: the document is a nlohmann::json in
// which some arrays are placeholders named by JSON pointer, each made one element at a
// time as it is written. The text is exactly nlohmann::json::dump() of the whole document.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>

namespace kb {

struct LazyArray {
  std::int64_t size = 0;
  std::function<nlohmann::json(std::int64_t)> element;
};
// JSON pointer of the placeholder ("/best_per_group", "/shard/summary/best") -> its array.
using LazyArrays = std::map<std::string, LazyArray>;

// "a/b~c" as one JSON pointer token: "a~1b~0c".
std::string pointer_token(const std::string& key);

// `doc` with each placeholder replaced by its array, as dump(indent) would write it (< 0:
// compact); every placeholder must be present in `doc` (InternalError otherwise).
void write_json(std::ostream& os, const nlohmann::json& doc, const LazyArrays& lazy, int indent = 2);
// `doc` with each placeholder replaced by its array: the document whole, in memory.
nlohmann::json whole_json(nlohmann::json doc, const LazyArrays& lazy);

}  // namespace kb
