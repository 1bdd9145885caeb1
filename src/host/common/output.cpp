#include "output.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "error.h"

namespace kb {

namespace fs = std::filesystem;

namespace {
bool holds_data(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "topologies" / "default.yaml", ec);
}
}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("KERNBENCH_DATA_DIR")) return env;
  if (const char* env = std::getenv("KERNBENCH_SOURCE_DIR")) return env;  // older name, kept for scripts
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // Installed: <prefix>/bin/kernbench-gpu with <prefix>/share/kernbench-gpu. A build
    // folder holds share/kernbench-gpu too (links into the source tree, made by CMake).
    for (fs::path p = exe.parent_path(); !p.empty(); p = p.parent_path()) {
      if (holds_data(p / "share" / "kernbench-gpu")) return (p / "share" / "kernbench-gpu").string();
      if (holds_data(p)) return p.string();
      if (p == p.root_path()) break;
    }
  }
  throw InputError("cannot find kernbench-gpu's data (topologies/, tools/plot/): set KERNBENCH_DATA_DIR to the folder "
                   "that holds them");
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

void check_output_path(const std::string& flag, const std::string& path, const std::string& example) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(flag + " " + path + ": is a folder; give a file name, e.g. " + path + "/" + example);
  // The nearest folder that exists must let us create what is missing below it.
  fs::path p = fs::absolute(fs::path(path), ec).parent_path();
  while (!p.empty() && !fs::exists(p, ec) && p != p.root_path()) p = p.parent_path();
  if (!fs::is_directory(p, ec)) throw InputError(flag + " " + path + ": " + p.string() + " is not a folder");
  // Try it: a file created and removed at once (access() says yes to root everywhere).
  const fs::path probe = p / (".kernbench-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw InputError(flag + " " + path + ": cannot write in " + p.string());
  ::close(fd);
  fs::remove(probe, ec);
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
  std::error_code ec;
  const std::string err = (fs::temp_directory_path(ec) / ("kernbench-plot-" + std::to_string(::getpid()) + ".err")).string();
  const std::string cmd = "'" + python + "' '" + data_dir() + "/tools/plot/" + script + "' --in '" + json_path +
                          "' --out '" + out_dir + "' >/dev/null 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  std::string text;
  {
    std::ifstream in(err);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  fs::remove(err, ec);
  if (status == 0) return;
  // The script's last line, without its own "error: " prefix (main adds one).
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string line = text.substr(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  const std::string said = line.rfind("error: ", 0) == 0 ? line.substr(7) : line;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw InputError(said.empty() ? script + ": rejected its input" : said);
  const std::string how = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                            : "signal " + std::to_string(WTERMSIG(status));
  throw InternalError("figure script " + script + " failed (" + how + ")" + (said.empty() ? "" : ": " + said), __FILE__,
                      __LINE__);
}

}  // namespace kb
