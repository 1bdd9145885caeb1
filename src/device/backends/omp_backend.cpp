// OpenMP backend: the one table of every family's functions (FamilyOps: the list's, whose
// OpenMP entry points the generated units instantiate, then the extensions registered), and
// the dispatch through it.
#include <omp.h>

#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "../sweep/reduce.inl"
#include "family_ops.h"

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
constexpr std::int32_t kListed = 0
#define KB_COUNT(id, Model) +1
    KB_FAMILIES(KB_COUNT)
#undef KB_COUNT
    ;
// The one table: the families of the list, in its order (their ids), then those registered.
std::vector<FamilyOps>& table() {
  static std::vector<FamilyOps> t = {
#define KB_OPS(id, Model) family_ops_of<Model>(#id),
      KB_FAMILIES(KB_OPS)
#undef KB_OPS
  };
  return t;
}
}  // namespace

KB_FAMILIES(KB_CHECK_LAYOUT)

Family register_extension(const FamilyOps& e) {
  table().push_back(e);
  return static_cast<Family>(static_cast<std::int32_t>(table().size()) - 1);
}

bool is_extension(Family f) {
  const std::int32_t i = static_cast<std::int32_t>(f);
  return i >= kListed && i < static_cast<std::int32_t>(table().size());
}

const FamilyOps& family_ops(Family f) {
  const std::int32_t i = static_cast<std::int32_t>(f);
  if (i < 0 || i >= static_cast<std::int32_t>(table().size())) throw std::logic_error("unknown workload family");
  return table()[static_cast<std::size_t>(i)];
}

void eval_omp(Family f, const void* configs, std::size_t n, void* results, int threads) {
  // One to three configs (an eval) on the calling thread: waking the team
  // costs more than they do, and the results do not depend on the thread count.
  constexpr std::size_t kFewConfigs = 3;
  ThreadScope scope(n <= kFewConfigs ? 1 : threads);
  family_ops(f).eval_omp(configs, n, results);
}

SweepSummary sweep_omp(const Space& space, const Reductions& red, std::int64_t chunk, int threads) {
  ThreadScope scope(threads);
  return family_ops(space.family).sweep_omp(space, red, chunk);
}

std::size_t config_size(Family f) { return family_ops(f).config_size; }
int status_count(Family f) { return family_ops(f).statuses; }
std::size_t hw_offset(Family f) { return family_ops(f).hw_offset; }
std::size_t result_size(Family f) { return family_ops(f).result_size; }
void complete_config(Family f, void* config) { family_ops(f).complete(config); }
void evaluate_host(Family f, const void* config, void* result) { family_ops(f).evaluate(config, result); }
HostFigures figures_host(Family f, const void* config, int pareto) { return family_ops(f).figures(config, pareto); }

SpaceDecoder::SpaceDecoder(const Space& space) : space_(space), flat_(detail::flatten_values(space)) {}

void SpaceDecoder::operator()(std::int64_t i, void* config) const {
  family_ops(space_.family).decode(space_, flat_.data(), i, config);
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
