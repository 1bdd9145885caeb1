#include "output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "error.h"

namespace kb {

namespace fs = std::filesystem;

std::string source_dir() {
  if (const char* env = std::getenv("KERNBENCH_SOURCE_DIR")) return env;
  return KB_SOURCE_DIR;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw InputError(p.parent_path().string() + ": cannot create folder: " + ec.message());
  }
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write file");
    out << content;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw InputError(path + ": write failed");
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(path + ": cannot rename into place");
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ":1:1: (file): cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {
bool can_plot(const std::string& python) {
  const std::string cmd = "'" + python + "' -c 'import matplotlib' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}
}  // namespace

std::string find_plot_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("KERNBENCH_PYTHON")) return can_plot(env) ? env : "";
  candidates = {"python3", "/usr/bin/python3"};
  for (const auto& c : candidates)
    if (can_plot(c)) return c;
  return "";
}

void render_figures(const std::string& script, const std::string& json_path, const std::string& out_dir) {
  const std::string python = find_plot_python();
  if (python.empty())
    throw InputError("figures: matplotlib is not available to python3; install it with "
                     "'apt-get install python3-matplotlib' or 'python3 -m pip install matplotlib' "
                     "(numbers were written to " + out_dir + ")");
  const std::string cmd = "'" + python + "' '" + source_dir() + "/tools/plot/" + script + "' --in '" + json_path +
                          "' --out '" + out_dir + "' >/dev/null";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) throw InternalError("figure script " + script + " failed (exit " + std::to_string(rc) + ")", __FILE__, __LINE__);
}

}  // namespace kb
