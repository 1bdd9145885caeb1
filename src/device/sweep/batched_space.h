// What the sweep engine sweeps: a space of configs of one family, as the families of the one
// list (src/device/models/families.h) define them, and the decoding of its flat indices.
// Below the backends: they and the host include it; it includes only the models.
#pragma once

#include <cstdint>
#include <vector>

#include "../models/families.h"

namespace kb::batched {

enum class Family : std::int32_t {
#define KB_FAMILY_ID(id, Model) id,
  KB_FAMILIES(KB_FAMILY_ID)
#undef KB_FAMILY_ID
};

// A space of configs of one family: `base` (the bytes of a Config) with some int64 fields
// swept. Axes are mixed-radix digits of a flat index, the last axis fastest; the first
// `group_axes` axes name a group (e.g. the shape), and the sweep returns the best config
// of each group. An axis sets one field, or several at once (a zipped axis: each value is
// a tuple, e.g. the (m, n, k) of a list of shapes).
struct Space {
  Family family{};
  std::vector<unsigned char> base;
  struct Axis {
    std::vector<std::int64_t> offsets;  // of the int64 fields in Config that it sets
    std::vector<std::int64_t> values;   // length() tuples of offsets.size() values, one after another
    Axis() = default;
    Axis(std::int64_t offset, std::vector<std::int64_t> v) : offsets{offset}, values(std::move(v)) {}
    Axis(std::vector<std::int64_t> o, std::vector<std::int64_t> v) : offsets(std::move(o)), values(std::move(v)) {}
    std::int64_t width() const { return static_cast<std::int64_t>(offsets.size()); }
    std::int64_t length() const { return offsets.empty() ? 0 : static_cast<std::int64_t>(values.size()) / width(); }
  };
  std::vector<Axis> axes;
  int group_axes = 0;
  std::int64_t size() const;
  std::int64_t groups() const;
};

// Decodes flat indices of a space into configs (host side, for reporting). Holds a
// reference to `space`.
class SpaceDecoder {
 public:
  explicit SpaceDecoder(const Space& space);
  // Writes the config (the family's Config, completed) of index i to `config`.
  void operator()(std::int64_t i, void* config) const;

 private:
  const Space& space_;
  std::vector<std::int64_t> flat_;
};

}  // namespace kb::batched
