// One results table: named, typed columns written as JSON (an array of objects), CSV and a
// terminal table from the same definition, so a figure has one name everywhere.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kb {

// What a column holds; Table::add checks every value against it (null is always allowed).
enum class ColType { integer, real, text, boolean, any };

struct Column {
  std::string name;  // JSON key and CSV header, e.g. "latency_ps"
  std::string unit;  // "ps", "bytes", "TFLOP/s", ... or "" (counts, names)
  ColType type = ColType::any;
  // Left out of every output of a table whose rows all hold null in it (a mixture-of-experts
  // figure in a table of dense models), so that such tables read as they did before it.
  bool optional = false;
};

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // One value per column (numbers, strings, booleans or null).
  void add(std::vector<nlohmann::json> row);

  const std::vector<Column>& columns() const { return columns_; }
  std::size_t rows() const { return rows_.size(); }
  nlohmann::json row_json(std::size_t r) const;
  nlohmann::json json() const;  // [{"name": value, ...}, ...]
  std::string csv() const;      // a header line, then one line per row
  // Aligned columns for a terminal. A column in picoseconds is shown in microseconds
  // (header NAME_us); reals with 3 significant decimals.
  std::string text(const std::string& indent = "  ") const;
  // One row as a list for a terminal: "  name  value unit" per column (times also in us).
  std::string record(std::size_t r, const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<nlohmann::json>> rows_;
  // Whether column c is written: not an optional column that every row holds null in.
  bool shown(std::size_t c) const;
};

// A value as a CSV field or terminal cell: strings bare (quoted in CSV when needed),
// integers in full, reals with enough digits to read back the same double.
std::string cell_text(const nlohmann::json& v);

// `v` with `digits` digits after the point ("3.14"): the benches' text tables.
std::string fixed_digits(double v, int digits);

}  // namespace kb
