// The value-list parser of sweep axes and space files ("1,2", "8:4096:*2", "1:100:+7", ...).
#include <string>

#include "fuzz.h"
#include "host/common/error.h"
#include "host/sweep/axis_values.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kb::parse_axis_values("--m", text);
  } catch (const kb::InputError&) {
  }
  try {
    kb::parse_axis_values("--m", text, 1, 1 << 20);
  } catch (const kb::InputError&) {
  }
  return 0;
}
