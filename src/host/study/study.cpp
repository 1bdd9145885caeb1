#include "study.h"

#include <chrono>
#include <cstring>

#include "host/common/error.h"
#include "host/common/parallel.h"
#include "host/parity/figures.h"

namespace kb {

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Study::Study(const Family& f, BackendKind backend, Engines engines) : fam_(f), backend_(backend), engines_(engines) {
  KB_INTERNAL_CHECK(engines.batched || engines.reference, "study: no engine to run");
}

std::size_t Study::add(const void* config, std::vector<nlohmann::json> labels) {
  KB_INTERNAL_CHECK(status_.empty(), "study: a point added after it ran");
  const auto* p = static_cast<const unsigned char*>(config);
  configs_.insert(configs_.end(), p, p + fam_.config_size());
  labels_.push_back(std::move(labels));
  return labels_.size() - 1;
}

void Study::run(Rejected rejected, const std::string* trace_path) {
  const std::size_t n = size();
  KB_INTERNAL_CHECK(!trace_path || n == 1, "study: a trace is written for a single point only");
  batched_.assign(n * fam_.result_size(), 0);
  reference_.assign(n * fam_.result_size(), 0);
  status_.assign(n, 0);
  diffs_.assign(n, "");
  reference_s_.assign(n, 0.0);
  invalid_ = checked_ = mismatches_ = 0;

  if (engines_.batched) {
    const auto t0 = std::chrono::steady_clock::now();
    eval_batch(backend_, fam_.id, configs_.data(), n, batched_.data());
    batched_s_ = since(t0);
    for (std::size_t i = 0; i < n; ++i) {
      std::memcpy(&status_[i], batched(i), sizeof(std::int32_t));  // every Result starts with its status
      if (status_[i] == 0) continue;
      switch (rejected) {
        case Rejected::input_error: throw InputError(fam_.status_message(status_[i], config(i)));
        case Rejected::internal_error:
          throw InternalError("batched model rejected a validated config: " + fam_.status_message(status_[i], config(i)),
                              __FILE__, __LINE__);
        case Rejected::invalid:
          if (fam_.check(config(i)) != status_[i])
            throw InternalError(fam_.name + ": the model's status differs from the check", __FILE__, __LINE__);
          ++invalid_;
      }
    }
  }
  if (!engines_.reference) return;
  // The reference runs are independent (each its own runtime, config and result slot): one
  // thread per core, the first error (by point) raised as a loop in order would.
  parallel_for(n, [&](std::size_t i) {
    if (!valid(i)) return;
    const auto t0 = std::chrono::steady_clock::now();
    fam_.reference(config(i), reference_.data() + i * fam_.result_size(), trace_path);
    reference_s_[i] = since(t0);
    if (engines_.batched) diffs_[i] = figures_diff(fam_, config(i), reference(i), batched(i));
  });
  if (!engines_.batched) return;
  for (std::size_t i = 0; i < n; ++i) {
    if (!valid(i)) continue;
    ++checked_;
    if (!diffs_[i].empty()) ++mismatches_;
  }
}

double Study::reference_seconds() const {
  double s = 0;
  for (double x : reference_s_) s += x;
  return s;
}

nlohmann::json Study::parity_json() const {
  return {{"checked", checked_}, {"mismatches", mismatches_}, {"ok", mismatches_ == 0}};
}

std::string Study::parity_line(const std::string& noun) const {
  return "parity: " + std::to_string(checked_ - mismatches_) + "/" + std::to_string(checked_) + " " + noun +
         " identical between the reference engine and the batched model (batched backend: " + to_string(backend_) + ")";
}

void Study::require_parity() const {
  for (std::size_t i = 0; i < size(); ++i) {
    if (diffs_[i].empty()) continue;
    std::string where;
    for (const nlohmann::json& l : labels_[i]) where += (l.is_string() ? l.get<std::string>() : l.dump()) + "/";
    throw InternalError("parity failure: " + where + nlohmann::json(config_values(fam_, config(i))).dump() + ": " + diffs_[i],
                        __FILE__, __LINE__);
  }
}

Table Study::table(const std::vector<Column>& label_columns, bool reference_latency) const {
  std::vector<Column> cols = label_columns;
  for (const Column& c : config_columns(fam_)) cols.push_back(c);
  for (const Column& c : result_columns(fam_)) cols.push_back(c);
  if (reference_latency) cols.push_back({"reference_latency_ps", "ps", ColType::integer});
  cols.push_back({"parity", "", ColType::boolean});
  Table t(cols);
  const ColumnDesc* latency = fam_.column("latency_ps");
  KB_INTERNAL_CHECK(latency || !reference_latency, "study: family " + fam_.name + " has no latency_ps column");
  for (std::size_t i = 0; i < size(); ++i) {
    if (!valid(i)) continue;
    KB_INTERNAL_CHECK(labels_[i].size() == label_columns.size(), "study: a point's labels and the label columns differ");
    std::vector<nlohmann::json> row = labels_[i];
    for (auto& v : config_values(fam_, config(i))) row.push_back(std::move(v));
    for (const ColumnDesc& col : fam_.columns) row.push_back(col.get(config(i), batched(i)));
    if (reference_latency) row.push_back(latency->get(config(i), reference(i)));
    row.push_back(diffs_[i].empty());
    t.add(std::move(row));
  }
  return t;
}

}  // namespace kb
