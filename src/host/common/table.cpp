#include "table.h"

#include <sstream>

#include <iomanip>

#include <algorithm>
#include <cstdio>

#include "error.h"

namespace kb {

namespace {

bool is_ps(const Column& c) { return c.unit == "ps"; }

std::string csv_field(const nlohmann::json& v) {
  std::string s = cell_text(v);
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string terminal_cell(const Column& c, const nlohmann::json& v) {
  char b[64];
  if (is_ps(c) && v.is_number()) {
    std::snprintf(b, sizeof b, "%.3f", v.get<double>() / 1e6);
    return b;
  }
  if (v.is_number_float()) {
    std::snprintf(b, sizeof b, "%.3f", v.get<double>());
    return b;
  }
  return cell_text(v);
}

}  // namespace

std::string cell_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

void Table::add(std::vector<nlohmann::json> row) {
  KB_INTERNAL_CHECK(row.size() == columns_.size(), "a table row has " + std::to_string(row.size()) + " values for " +
                                                       std::to_string(columns_.size()) + " columns");
  for (std::size_t c = 0; c < row.size(); ++c) {
    const nlohmann::json& v = row[c];
    bool ok = v.is_null();
    switch (columns_[c].type) {
      case ColType::integer: ok |= v.is_number_integer(); break;
      case ColType::real: ok |= v.is_number(); break;
      case ColType::text: ok |= v.is_string(); break;
      case ColType::boolean: ok |= v.is_boolean(); break;
      case ColType::any: ok = true; break;
    }
    KB_INTERNAL_CHECK(ok, "column " + columns_[c].name + " given " + v.dump());
  }
  rows_.push_back(std::move(row));
}

bool Table::shown(std::size_t c) const {
  if (!columns_[c].optional) return true;
  return std::any_of(rows_.begin(), rows_.end(), [c](const std::vector<nlohmann::json>& row) { return !row[c].is_null(); });
}

std::string Table::record(std::size_t r, const std::string& indent) const {
  std::size_t width = 0;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (shown(c)) width = std::max(width, columns_[c].name.size());
  std::string out;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (!shown(c)) continue;
    const nlohmann::json& v = rows_[r][c];
    std::string text = cell_text(v);
    if (v.is_number_float()) {
      char b[48];
      std::snprintf(b, sizeof b, "%.3f", v.get<double>());
      text = b;
    }
    if (v.is_null()) text = "-";
    else if (is_ps(columns_[c]) && v.is_number()) text += " ps (" + terminal_cell(columns_[c], v) + " us)";
    else if (!columns_[c].unit.empty()) text += " " + columns_[c].unit;
    out += indent + columns_[c].name + std::string(width + 2 - columns_[c].name.size(), ' ') + text + "\n";
  }
  return out;
}

nlohmann::json Table::row_json(std::size_t r) const {
  nlohmann::json o = nlohmann::json::object();
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (shown(c)) o[columns_[c].name] = rows_[r][c];
  return o;
}

nlohmann::json Table::json() const {
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t r = 0; r < rows_.size(); ++r) a.push_back(row_json(r));
  return a;
}

std::string Table::csv() const {
  std::vector<std::size_t> cols;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (shown(c)) cols.push_back(c);
  std::string s;
  for (std::size_t i = 0; i < cols.size(); ++i) s += (i ? "," : "") + csv_field(columns_[cols[i]].name);
  s += "\n";
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < cols.size(); ++i) s += (i ? "," : "") + csv_field(row[cols[i]]);
    s += "\n";
  }
  return s;
}

std::string Table::text(const std::string& indent) const {
  std::vector<std::string> head;
  std::vector<std::size_t> width;
  for (const Column& c : columns_) {
    head.push_back(is_ps(c) && c.name.size() > 3 && c.name.compare(c.name.size() - 3, 3, "_ps") == 0
                       ? c.name.substr(0, c.name.size() - 3) + "_us"
                       : c.name);
    width.push_back(head.back().size());
  }
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows_) {
    cells.emplace_back();
    for (std::size_t c = 0; c < row.size(); ++c) {
      cells.back().push_back(terminal_cell(columns_[c], row[c]));
      width[c] = std::max(width[c], cells.back().back().size());
    }
  }
  auto line = [&](const std::vector<std::string>& v) {
    std::string s = indent;
    bool first = true;
    for (std::size_t c = 0; c < v.size(); ++c) {
      if (!shown(c)) continue;
      s += (first ? "" : " ") + std::string(width[c] - v[c].size(), ' ') + v[c];
      first = false;
    }
    return s + "\n";
  };
  std::string out = line(head);
  for (const auto& r : cells) out += line(r);
  return out;
}

std::string fixed_digits(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

}  // namespace kb
