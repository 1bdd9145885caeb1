// OpenMP backend: the dispatch to each family's unit (omp_family.h, instantiated per family
// in generated units), and the host-side helpers that need a family's types.
#include <omp.h>

#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "../sweep/reduce.inl"
#include "family_units.h"
#include "host_helpers.h"

namespace kb::batched {

namespace {
struct ThreadScope {
  int saved;
  explicit ThreadScope(int threads) : saved(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~ThreadScope() { omp_set_num_threads(saved); }
};
}  // namespace

namespace {
std::vector<ExtensionFamily>& extensions() {
  static std::vector<ExtensionFamily> e;
  return e;
}
constexpr std::int32_t kListed = 0
#define KB_COUNT(id, Model) +1
    KB_FAMILIES(KB_COUNT)
#undef KB_COUNT
    ;
}  // namespace

Family register_extension(const ExtensionFamily& e) {
  extensions().push_back(e);
  return static_cast<Family>(kListed + static_cast<std::int32_t>(extensions().size()) - 1);
}

bool is_extension(Family f) {
  const std::int32_t i = static_cast<std::int32_t>(f) - kListed;
  return i >= 0 && i < static_cast<std::int32_t>(extensions().size());
}

const ExtensionFamily& extension(Family f) {
  if (!is_extension(f)) throw std::logic_error("unknown workload family");
  return extensions()[static_cast<std::size_t>(static_cast<std::int32_t>(f) - kListed)];
}

#define KB_DISPATCH(id, Model) \
  case Family::id: return CALL(Model);

void eval_omp(Family f, const void* configs, std::size_t n, void* results, int threads) {
  // One to three configs (an eval) on the calling thread: waking the team
  // costs more than they do, and the results do not depend on the thread count.
  constexpr std::size_t kFewConfigs = 3;
  ThreadScope scope(n <= kFewConfigs ? 1 : threads);
#define CALL(Model) eval_omp_family<Model>(configs, n, results)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  extension(f).eval_omp(configs, n, results);
}

SweepSummary sweep_omp(const Space& space, const Reductions& red, std::int64_t chunk, int threads) {
  ThreadScope scope(threads);
#define CALL(Model) sweep_omp_family<Model>(space, red, chunk)
  switch (space.family) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  return extension(space.family).sweep_omp(space, red, chunk);
}

std::size_t config_size(Family f) {
#define CALL(Model) sizeof(Model::Config)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  return extension(f).config_size;
}

int status_count(Family f) {
#define CALL(Model) Model::kStatuses
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  return extension(f).statuses;
}

std::size_t hw_offset(Family f) {
#define CALL(Model) offsetof(Model::Config, hw)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  return extension(f).hw_offset;
}

KB_FAMILIES(KB_CHECK_LAYOUT)

std::size_t result_size(Family f) {
#define CALL(Model) sizeof(Model::Result)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  return extension(f).result_size;
}


void complete_config(Family f, void* config) {
#define CALL(Model) host_detail::complete_impl<Model>(config)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  extension(f).complete(config);
}

void evaluate_host(Family f, const void* config, void* result) {
#define CALL(Model) host_detail::evaluate_impl<Model>(config, result)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  extension(f).evaluate(config, result);
}

HostFigures figures_host(Family f, const void* config, int pareto) {
#define CALL(Model) host_detail::figures_impl<Model>(config, pareto)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  return extension(f).figures(config, pareto);
}

SpaceDecoder::SpaceDecoder(const Space& space) : space_(space), flat_(detail::flatten_values(space)) {}

void SpaceDecoder::operator()(std::int64_t i, void* config) const {
#define CALL(Model) host_detail::decode_impl<Model>(space_, flat_.data(), i, config)
  switch (space_.family) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  extension(space_.family).decode(space_, flat_.data(), i, config);
}

std::int64_t Space::size() const {
  std::int64_t n = 1;
  for (const auto& a : axes) n *= a.length();
  return n;
}

std::int64_t Space::groups() const {
  std::int64_t n = 1;
  for (int a = 0; a < group_axes; ++a) n *= axes[static_cast<std::size_t>(a)].length();
  return n;
}

}  // namespace kb::batched
