// Library code reports problems by throwing; only main() turns them into exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace kb {

// A user mistake (bad file, bad value, bad request): exit code 2, one line on stderr.
// The message is complete, e.g. "topologies/x.yaml:12:5: cube.hbm.bandwidth_gbps: must be > 0 (got -3)".
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// The machine cannot do what was asked (a device out of memory, no usable driver): exit
// code 4, one line that says what to change.
class EnvironmentError : public std::runtime_error {
 public:
  explicit EnvironmentError(const std::string& what) : std::runtime_error(what) {}
};

// A broken invariant inside the simulator: exit code 3.
class InternalError : public std::logic_error {
 public:
  InternalError(const std::string& what, const char* file, int line)
      : std::logic_error(std::string(file) + ":" + std::to_string(line) + ": internal error: " + what) {}
};

// Throws InternalError. Out of line and cold: a check's message costs its caller nothing
// until it fails (a throw built in place makes every caller save registers it never uses).
[[noreturn]] __attribute__((noinline, cold)) inline void internal_failure(const std::string& what, const char* file,
                                                                          int line) {
  throw InternalError(what, file, line);
}

#define KB_INTERNAL_CHECK(cond, msg)                                                     \
  do {                                                                                   \
    if (__builtin_expect(!(cond), 0)) ::kb::internal_failure((msg), __FILE__, __LINE__); \
  } while (0)

}  // namespace kb
