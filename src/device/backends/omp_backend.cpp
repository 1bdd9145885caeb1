// OpenMP backend: the dispatch to each family's unit (omp_family.h, instantiated per family
// in generated units), and the host-side helpers that need a family's types.
#include <omp.h>

#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "../sweep/reduce.inl"
#include "family_units.h"

namespace kb::batched {

namespace {
struct ThreadScope {
  int saved;
  explicit ThreadScope(int threads) : saved(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~ThreadScope() { omp_set_num_threads(saved); }
};
[[noreturn]] void unknown_family() { throw std::logic_error("unknown workload family"); }
}  // namespace

#define KB_DISPATCH(id, Model) \
  case Family::id: return CALL(Model);

void eval_omp(Family f, const void* configs, std::size_t n, void* results, int threads) {
  ThreadScope scope(threads);
#define CALL(Model) eval_omp_family<Model>(configs, n, results)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

SweepSummary sweep_omp(const Space& space, const Reductions& red, std::int64_t chunk, int threads) {
  ThreadScope scope(threads);
#define CALL(Model) sweep_omp_family<Model>(space, red, chunk)
  switch (space.family) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

std::size_t config_size(Family f) {
#define CALL(Model) sizeof(Model::Config)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

int status_count(Family f) {
#define CALL(Model) Model::kStatuses
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

std::size_t hw_offset(Family f) {
#define CALL(Model) offsetof(Model::Config, hw)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

// What the generic engine and the type-erased boundary assume of every family's PODs.
#define KB_CHECK_LAYOUT(id, Model)                                                                        \
  static_assert(std::is_trivially_copyable<Model::Config>::value && sizeof(Model::Config) % 8 == 0,       \
                #id ": a Config is a POD of int64 fields (sweep axes write int64s at offsets)");          \
  static_assert(std::is_same<decltype(Model::Config::hw), HwConfig>::value, #id ": a Config embeds HwConfig hw"); \
  static_assert(std::is_trivially_copyable<Model::Result>::value && offsetof(Model::Result, status) == 0 &&  \
                    std::is_same<decltype(Model::Result::status), std::int32_t>::value,                    \
                #id ": a Result starts with its int32 status");                                           \
  static_assert(std::is_same<decltype(Model::Result::latency_ps), ps_t>::value, #id ": a Result has ps_t latency_ps"); \
  static_assert(Model::kStatuses >= 1 && Model::kStatuses <= kMaxStatuses, #id ": 1..16 statuses");
KB_FAMILIES(KB_CHECK_LAYOUT)
#undef KB_CHECK_LAYOUT

std::size_t result_size(Family f) {
#define CALL(Model) sizeof(Model::Result)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

namespace {
template <class Model>
void complete_impl(void* config) {
  Model::complete(*static_cast<typename Model::Config*>(config));
}
template <class Model>
void evaluate_impl(const void* config, void* result) {
  *static_cast<typename Model::Result*>(result) = Model::evaluate(*static_cast<const typename Model::Config*>(config));
}
template <class Model>
HostFigures figures_impl(const void* config, int pareto) {
  const auto& c = *static_cast<const typename Model::Config*>(config);
  const typename Model::Result r = Model::evaluate(c);
  detail::SpaceView<typename Model::Config> s{};
  s.pareto = pareto;
  const detail::Keyed k = detail::keyed_of<Model>(s, 0, 0, c, r);
  return HostFigures{r.status, k.latency, k.cost};
}
template <class Model>
void decode_impl(const Space& space, const std::int64_t* flat, std::int64_t i, void* config) {
  *static_cast<typename Model::Config*>(config) =
      detail::decode<Model>(detail::make_view<typename Model::Config>(space, flat), i);
}
}  // namespace

void complete_config(Family f, void* config) {
#define CALL(Model) complete_impl<Model>(config)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

void evaluate_host(Family f, const void* config, void* result) {
#define CALL(Model) evaluate_impl<Model>(config, result)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

HostFigures figures_host(Family f, const void* config, int pareto) {
#define CALL(Model) figures_impl<Model>(config, pareto)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
}

SpaceDecoder::SpaceDecoder(const Space& space) : space_(space), flat_(detail::flatten_values(space)) {}

void SpaceDecoder::operator()(std::int64_t i, void* config) const {
#define CALL(Model) decode_impl<Model>(space_, flat_.data(), i, config)
  switch (space_.family) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  unknown_family();
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
