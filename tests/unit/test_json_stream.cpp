// write_json: a document written with some arrays made element by element is the same
// text as dump() of the whole document, pretty (any indent) or compact.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "host/common/error.h"
#include "host/common/json_stream.h"

namespace kb {
namespace {

nlohmann::json random_value(std::mt19937& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 3 ? 5 : 7));
  switch (kind) {
    case 0: return nullptr;
    case 1: return static_cast<std::int64_t>(rng()) - (1 << 30);
    case 2: return rng() % 2 == 0;
    case 3: return static_cast<double>(rng() % 1000) / 7.0;
    case 4: {
      const char* texts[] = {"", "a", "line\nbreak", "tab\there", "q\"uote", "\xc2\xb5s", "a/b~c"};
      return texts[rng() % 7];
    }
    case 5: {
      nlohmann::json a = nlohmann::json::array();
      for (unsigned n = rng() % 4, i = 0; i < n; ++i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      const char* keys[] = {"best", "a/b", "t~x", "z", "line\nkey", "pareto", "k"};
      for (unsigned n = rng() % 4, i = 0; i < n; ++i) o[keys[rng() % 7]] = random_value(rng, depth + 1);
      return o;
    }
  }
}

// Every array in `v` (at pointer `ptr`) becomes a placeholder with probability 1/2.
void make_lazy(std::mt19937& rng, nlohmann::json& v, const std::string& ptr, LazyArrays& lazy,
               std::vector<nlohmann::json>& keep) {
  if (v.is_array() && rng() % 2 == 0 && !ptr.empty()) {
    keep.push_back(v);
    const std::size_t at = keep.size() - 1;
    lazy[ptr] = {static_cast<std::int64_t>(v.size()),
                 [&keep, at](std::int64_t i) { return keep[at][static_cast<std::size_t>(i)]; }};
    v = nullptr;
    return;
  }
  if (v.is_object())
    for (auto& [k, m] : v.items()) make_lazy(rng, m, ptr + "/" + pointer_token(k), lazy, keep);
  if (v.is_array())
    for (std::size_t i = 0; i < v.size(); ++i) make_lazy(rng, v[i], ptr + "/" + std::to_string(i), lazy, keep);
}

TEST(JsonStream, SameTextAsDump) {
  std::mt19937 rng(11);
  int with_lazy = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    nlohmann::json doc = nlohmann::json::object();
    for (unsigned n = 1 + rng() % 5, i = 0; i < n; ++i) doc["m" + std::to_string(i)] = random_value(rng, 0);
    const int indent = trial % 3 == 0 ? -1 : 1 + trial % 4;
    const std::string want = doc.dump(indent);
    std::vector<nlohmann::json> keep;
    keep.reserve(1000);
    LazyArrays lazy;
    make_lazy(rng, doc, "", lazy, keep);
    with_lazy += !lazy.empty();
    std::ostringstream os;
    write_json(os, doc, lazy, indent);
    ASSERT_EQ(os.str(), want) << "trial " << trial;
  }
  EXPECT_GT(with_lazy, 500);
}

TEST(JsonStream, APlaceholderMissingFromTheDocumentIsAnError) {
  std::ostringstream os;
  const LazyArrays lazy = {{"/rows", {1, [](std::int64_t) { return nlohmann::json(1); }}}};
  EXPECT_THROW(write_json(os, nlohmann::json{{"row", nullptr}}, lazy), InternalError);
  EXPECT_NO_THROW(write_json(os, nlohmann::json{{"rows", nullptr}}, lazy));
}

}  // namespace
}  // namespace kb
