// The one table of topology fields. It drives the loader, --set, sweep axes over hardware
// (--hw PATH=LIST), the resolved topology every JSON document records, and
// docs/topology.md (a test checks that the document lists every field).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec.h"

namespace kb {

struct HwField {
  const char* path;     // e.g. "cube.hbm.bandwidth_gbps"
  std::size_t offset;   // of its int64 in HwConfig
  bool required;
  std::int64_t fallback;  // when not required and absent
  std::vector<std::string> names;  // enum fields: the name of each value; empty for integers
  const char* unit;
  const char* meaning;
  std::int64_t lo = 0, hi = 0;  // inclusive range (for enums: 0..names-1), from kHwRanges (hw.h)

  bool is_enum() const { return !names.empty(); }
  std::int64_t get(const HwConfig& h) const;
  void set(HwConfig& h, std::int64_t v) const;
  // The value as a topology file writes it: a number, or an enum's name.
  std::string text(std::int64_t v) const;
  nlohmann::json json(std::int64_t v) const;
  // Parses one value; on failure returns false and says why in `why`, e.g.
  // "expected an integer (got 'abc')" or "must be > 0 (got -3)".
  bool parse(const std::string& text, std::int64_t* v, std::string* why) const;
  std::string range_text() const;  // "1..1000000" or "os|ws|is"
};

// The one rule for an integer's text, wherever the tool reads one (topology fields, --set,
// axis lists, zip tuples, space files, --max-ops): decimal digits, a '-' first only where
// `negative` allows it, and no leading zero (010 reads as octal elsewhere: it is refused, not
// taken as 10 or 8). False with `why` set when the text breaks it; the value's range is the
// caller's to check.
bool integer_text_ok(const std::string& text, bool negative, std::string* why);

// Parses a decimal integer in lo..hi, as HwField::parse does an integer field.
bool parse_int_in(const std::string& text, std::int64_t lo, std::int64_t hi, std::int64_t* v, std::string* why);
// The same for a command-line flag's value: InputError "FLAG TEXT: why" when it is not one.
std::int64_t parse_int_flag(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi);

const std::vector<HwField>& hw_fields();
const HwField* find_hw_field(const std::string& path);

// Every field's resolved value, by path ({"cube.hbm.bandwidth_gbps": 819, ...}).
nlohmann::json hw_json(const HwConfig& h);
// What a result document records of its topology: name, source, hash, the --set overrides
// and every field's value, so a result can be re-checked without the YAML file.
nlohmann::json topology_record(const TopologySpec& t);

}  // namespace kb
