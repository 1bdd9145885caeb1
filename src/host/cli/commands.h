#pragma once

#include <exception>
#include <string>
#include <vector>

namespace kb {

// The whole command line; returns the process exit code. Throws nothing.
int cli_main(int argc, char** argv);

// The command line's words (the program's name first), run: returns 0, or help's or
// --version's code; throws for anything wrong (InputError: bad input; EnvironmentError;
// InternalError or another exception: a fault). What cli_main prints as `error: ...` is the
// exception's message. Output goes to the process's stdout and stderr; a program embedding
// the tool calls the typed API (src/host/api/) instead, which writes where it is told.
int cli_run(const std::vector<std::string>& words);

// The line cli_main prints for an exception cli_run threw ("error: ..."), and its exit code:
// 2 bad input, 3 an internal error or no memory, 4 the environment.
std::string cli_error_line(std::exception_ptr error, int* code);

}  // namespace kb
