#include "registry.h"

#include <regex>

namespace kb {

namespace {
std::vector<BenchInfo>& store() {
  static std::vector<BenchInfo> b;
  return b;
}
std::vector<std::string>& errors() {
  static std::vector<std::string> e;
  return e;
}
}  // namespace

bool valid_bench_name(const std::string& name) {
  static const std::regex kebab("^[a-z][a-z0-9]*(-[a-z0-9]+)*$");
  return std::regex_match(name, kebab);
}

bool register_bench(BenchInfo info) {
  if (!valid_bench_name(info.name)) {
    errors().push_back("bench name '" + info.name + "' is not kebab-case starting with a letter");
    return false;
  }
  if (find_bench(info.name)) {
    errors().push_back("bench '" + info.name + "' is registered twice");
    return false;
  }
  store().push_back(std::move(info));
  return true;
}

const std::vector<BenchInfo>& benches() { return store(); }

const BenchInfo* find_bench(const std::string& name) {
  for (const auto& b : store())
    if (b.name == name) return &b;
  return nullptr;
}

const std::vector<std::string>& bench_registry_errors() { return errors(); }

}  // namespace kb
