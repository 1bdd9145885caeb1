// Writing results: atomic files, and the Python that renders figures.
#pragma once

#include <string>
#include <vector>

namespace kb {

// Writes `content` to `path` through a temporary file in the same folder and a rename,
// creating folders as needed; readers never see a half-written file.
void write_file_atomic(const std::string& path, const std::string& content);
std::string read_file(const std::string& path);

// A Python 3 that can import matplotlib: $KERNBENCH_PYTHON, else python3 on PATH, else
// /usr/bin/python3. Empty when none can.
std::string find_plot_python();

// Runs tools/plot/<script> --in JSON --out DIR. Throws InputError with a one-line
// explanation (how to install matplotlib) when no suitable Python is found, and
// InternalError when the script fails.
void render_figures(const std::string& script, const std::string& json_path, const std::string& out_dir);

// Source tree root (for tools/plot and the shipped topologies).
std::string source_dir();

}  // namespace kb
