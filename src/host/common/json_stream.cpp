#include "json_stream.h"

#include <ostream>

#include "error.h"

namespace kb {

std::string pointer_token(const std::string& key) {
  std::string t;
  for (char c : key) {
    if (c == '~') t += "~0";
    else if (c == '/') t += "~1";
    else t += c;
  }
  return t;
}

namespace {

struct Writer {
  std::ostream& os;
  const LazyArrays& lazy;
  int indent;  // < 0: compact, as dump()
  std::size_t used = 0;

  void pad(int depth) {
    if (indent < 0) return;
    for (int i = 0; i < depth * indent; ++i) os.put(' ');
  }
  // Between an opening bracket and the first member, between members, and before the close.
  void open(char c) {
    os.put(c);
    if (indent >= 0) os.put('\n');
  }
  void next() { os << (indent >= 0 ? ",\n" : ","); }
  void close(char c, int depth) {
    if (indent >= 0) os.put('\n');
    pad(depth);
    os.put(c);
  }
  // dump(2) of `v` placed at `depth`: every line after the first moves right with it (a
  // newline inside the text is always a line break; in strings it is escaped).
  void put(const nlohmann::json& v, int depth) {
    const std::string text = v.dump(indent);
    std::size_t from = 0;
    for (std::size_t at; (at = text.find('\n', from)) != std::string::npos; from = at + 1) {
      os.write(text.data() + from, static_cast<std::streamsize>(at + 1 - from));
      pad(depth);
    }
    os.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
  }
  bool lazy_below(const std::string& ptr) const {
    const std::string prefix = ptr + "/";
    const auto it = lazy.lower_bound(prefix);
    return it != lazy.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }
  void write(const nlohmann::json& v, const std::string& ptr, int depth) {
    const auto it = lazy.find(ptr);
    if (it != lazy.end()) {
      ++used;
      const LazyArray& a = it->second;
      if (a.size == 0) {
        os << "[]";
        return;
      }
      open('[');
      for (std::int64_t i = 0; i < a.size; ++i) {
        if (i > 0) next();
        pad(depth + 1);
        put(a.element(i), depth + 1);
      }
      close(']', depth);
      return;
    }
    if (!v.is_structured() || v.empty() || !lazy_below(ptr)) {
      put(v, depth);
      return;
    }
    const bool object = v.is_object();
    open(object ? '{' : '[');
    std::size_t k = 0;
    for (auto m = v.begin(); m != v.end(); ++m, ++k) {
      if (k > 0) next();
      pad(depth + 1);
      if (object) os << nlohmann::json(m.key()).dump() << (indent >= 0 ? ": " : ":");
      write(*m, ptr + "/" + (object ? pointer_token(m.key()) : std::to_string(k)), depth + 1);
    }
    close(object ? '}' : ']', depth);
  }
};

}  // namespace

void write_json(std::ostream& os, const nlohmann::json& doc, const LazyArrays& lazy, int indent) {
  Writer w{os, lazy, indent};
  w.write(doc, "", 0);
  KB_INTERNAL_CHECK(w.used == lazy.size(), "write_json: a placeholder is missing from the document");
}

nlohmann::json whole_json(nlohmann::json doc, const LazyArrays& lazy) {
  for (const auto& [pointer, a] : lazy) {
    const nlohmann::json::json_pointer at(pointer);
    KB_INTERNAL_CHECK(doc.contains(at), "whole_json: a placeholder is missing from the document");
    nlohmann::json& place = doc[at];
    place = nlohmann::json::array();
    for (std::int64_t i = 0; i < a.size; ++i) place.push_back(a.element(i));
  }
  return doc;
}

}  // namespace kb
