// libFuzzer targets for the program's readers. Each target feeds arbitrary bytes to one
// reader: an input error (kb::InputError) is the expected answer to bad bytes; anything else
// (a crash, a sanitizer report, another exception) is a finding. Built with the `fuzz`
// preset (clang, -fsanitize=fuzzer,address) they fuzz; built otherwise they link
// driver.cpp and replay their seed corpus (tests/fuzz/corpus/TARGET/) as a regression test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <unistd.h>

namespace kb::fuzz {

// The bytes as a file (the readers take paths), one per process.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const char* ext) {
  const std::string path = "/tmp/kb-fuzz-" + std::to_string(::getpid()) + ext;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  return path;
}

}  // namespace kb::fuzz
