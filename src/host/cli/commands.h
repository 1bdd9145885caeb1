#pragma once

namespace kb {

// The whole command line; returns the process exit code. Throws nothing.
int cli_main(int argc, char** argv);

}  // namespace kb
