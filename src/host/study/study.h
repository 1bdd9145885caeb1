// The study loop, written once: a set of configs of one family, each run on the batched
// model and the reference engine, their figures compared (parity), and the rows of the
// family's table built from them. The benches, `eval` and the sweep's re-check all run their
// engines through it; the bench writers (bench_writer.h) turn it into documents and figures.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "host/common/error.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/sweep/backend.h"

namespace kb {

// What a config the batched model gives a non-zero status is.
enum class Rejected {
  internal_error,  // a bug: the study's configs were all checked (InternalError)
  input_error,     // the user's config (InputError with the family's status message)
  invalid,         // a point that does not fit: reported, not simulated; its status must equal the check's
};

// Which engines a study runs.
struct Engines {
  bool batched = true;
  bool reference = true;
};

class Study {
 public:
  Study(const Family& f, BackendKind backend, Engines engines = {});

  // Adds a point: a config of the family (completed) and the values of the label columns
  // the caller puts before the family's (e.g. shape and variant); returns its index.
  std::size_t add(const void* config, std::vector<nlohmann::json> labels = {});
  template <class Config>
  std::size_t add_config(const Config& c, std::vector<nlohmann::json> labels = {}) {
    KB_INTERNAL_CHECK(sizeof(Config) == fam_.config_size(), "study: a config of another family than " + fam_.name);
    return add(static_cast<const void*>(&c), std::move(labels));
  }

  // Runs the engines: the batched model over every point in one batch, then the reference
  // engine on each point the model accepts (with a Chrome trace to `trace_path` for a
  // single-point study), and compares their parity figures.
  void run(Rejected rejected, const std::string* trace_path = nullptr);

  const Family& family() const { return fam_; }
  BackendKind backend() const { return backend_; }
  Engines engines() const { return engines_; }
  std::size_t size() const { return labels_.size(); }
  const void* config(std::size_t i) const { return configs_.data() + i * fam_.config_size(); }
  const void* batched(std::size_t i) const { return batched_.data() + i * fam_.result_size(); }
  const void* reference(std::size_t i) const { return reference_.data() + i * fam_.result_size(); }
  // The result both engines agree on: the reference's when it ran, else the batched model's.
  const void* result(std::size_t i) const { return engines_.reference ? reference(i) : batched(i); }
  template <class T>
  const T& config_as(std::size_t i) const { return *static_cast<const T*>(config(i)); }
  template <class T>
  const T& batched_as(std::size_t i) const { return *static_cast<const T*>(batched(i)); }
  template <class T>
  const T& reference_as(std::size_t i) const { return *static_cast<const T*>(reference(i)); }
  bool valid(std::size_t i) const { return status_[i] == 0; }
  // The parity figures that differ at point i ("" when identical or not compared).
  const std::string& diff(std::size_t i) const { return diffs_[i]; }

  std::size_t invalid() const { return invalid_; }
  std::size_t checked() const { return checked_; }
  std::size_t mismatches() const { return mismatches_; }
  double batched_seconds() const { return batched_s_; }
  double reference_seconds(std::size_t i) const { return reference_s_[i]; }
  double reference_seconds() const;  // all points

  // {"checked", "mismatches", "ok"}: the documents' parity record.
  nlohmann::json parity_json() const;
  // "parity: a/b NOUN identical between the reference engine and the batched model (batched backend: X)"
  std::string parity_line(const std::string& noun) const;
  // InternalError naming the first point that differs, when one does.
  void require_parity() const;

  // The valid points as a table: the label columns, every config column, every result
  // column (of the batched model), then the reference's latency when asked, and parity.
  Table table(const std::vector<Column>& label_columns, bool reference_latency) const;

 private:
  const Family& fam_;
  BackendKind backend_;
  Engines engines_;
  std::vector<unsigned char> configs_, batched_, reference_;
  std::vector<std::vector<nlohmann::json>> labels_;
  std::vector<std::int32_t> status_;
  std::vector<std::string> diffs_;
  std::vector<double> reference_s_;
  std::size_t invalid_ = 0, checked_ = 0, mismatches_ = 0;
  double batched_s_ = 0;
};

}  // namespace kb
