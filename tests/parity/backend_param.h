// The parity tests' backends: a suite parametrised by BackendKind (OpenMP and CUDA) whose CUDA
// cases skip, saying why, where no device is present: they never fail for that reason and
// never pass without running. kb_parity_tests runs the OpenMP cases, kb_gpu_tests the CUDA ones.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "host/sweep/backend.h"

namespace kb {

inline void PrintTo(BackendKind b, std::ostream* os) { *os << to_string(b); }

namespace testing {

class BackendTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == BackendKind::cuda && batched::cuda_device_count(&why) == 0)
      GTEST_SKIP() << "CUDA backend not run: " << why;
  }
};

inline std::string backend_name(const ::testing::TestParamInfo<BackendKind>& p) { return to_string(p.param); }

}  // namespace testing
}  // namespace kb

// The suite `Suite` (a BackendTest, declared by the caller) over both backends.
#define KB_BACKEND_SUITE(Suite)                                                                          \
  INSTANTIATE_TEST_SUITE_P(Backends, Suite, ::testing::Values(::kb::BackendKind::omp, ::kb::BackendKind::cuda), \
                           ::kb::testing::backend_name)
