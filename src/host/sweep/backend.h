// Choosing and calling a batched-model backend, for any family.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "../../device/backends/backends.h"

namespace kb {

enum class BackendKind { omp, cuda };
const char* to_string(BackendKind b);

// "auto" picks cuda when the build has it and a device is present, else omp. Asking for
// cuda where it cannot run is an InputError that says why.
BackendKind resolve_backend(const std::string& requested);
// The same for running family `f`: "auto" is the OpenMP system for an extension family,
// which the CUDA backend does not compile (ADR 0017).
BackendKind resolve_backend(const std::string& requested, batched::Family f);

// The family id of a model type, from the one list (families.h).
template <class Model>
constexpr batched::Family family_id();
#define KB_FAMILY_OF(id, Model) \
  template <>                   \
  constexpr batched::Family family_id<Model>() { return batched::Family::id; }
KB_FAMILIES(KB_FAMILY_OF)
#undef KB_FAMILY_OF

// `n` configs of family `f` evaluated into `results` (the family's Config and Result).
void eval_batch(BackendKind b, batched::Family f, const void* configs, std::size_t n, void* results, int threads = 0);

template <class Model>
std::vector<typename Model::Result> eval(BackendKind b, const std::vector<typename Model::Config>& configs,
                                         int threads = 0) {
  std::vector<typename Model::Result> out(configs.size());
  if (!configs.empty()) eval_batch(b, family_id<Model>(), configs.data(), configs.size(), out.data(), threads);
  return out;
}

// Throws InputError when sweep could not run these arguments.
void validate_sweep(const batched::Space& space, std::int64_t chunk, const batched::Reductions& red);
batched::SweepSummary sweep(BackendKind b, const batched::Space& space, std::int64_t chunk = 1 << 20, int threads = 0,
                            const batched::Reductions& red = {});

// A space of family Model around `base`.
template <class Model>
batched::Space make_space(const typename Model::Config& base) {
  batched::Space s;
  s.family = family_id<Model>();
  s.base.resize(sizeof base);
  std::memcpy(s.base.data(), &base, sizeof base);
  return s;
}

template <class Model>
typename Model::Config decode_config(const batched::SpaceDecoder& decode, std::int64_t i) {
  typename Model::Config c;
  decode(i, &c);
  return c;
}

}  // namespace kb
