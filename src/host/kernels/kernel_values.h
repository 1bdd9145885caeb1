// Data mode of one kernel run on its own (a whole model's layer program carries values from
// one kernel to the next through these, docs/model.md section 13.9): the values of its input
// tensors, row-major in the kernel's own layout, and those of the tensor it writes.
#pragma once

#include <vector>

namespace kb {

struct KernelValues {
  std::vector<std::vector<float>> in;
  std::vector<float> out;
};

}  // namespace kb
