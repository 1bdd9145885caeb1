#include "output.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <iostream>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <vector>

#include "error.h"

namespace kb {

namespace fs = std::filesystem;

namespace {
bool holds_data(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "topologies" / "default.yaml", ec);
}
}  // namespace

namespace {
std::string g_data_dir;  // set_data_dir's folder
}  // namespace

void set_data_dir(const std::string& path) { g_data_dir = path; }

std::string data_dir() {
  if (const char* env = std::getenv("KERNBENCH_DATA_DIR")) return env;
  if (!g_data_dir.empty()) return g_data_dir;
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

namespace {
// What SIGINT or SIGTERM must undo: scratch files and the folders made for them, removed
// newest first, and a child process that is stopped first. Fixed arrays and system calls
// only, so the handler is async-signal-safe.
constexpr int kMaxScratch = 24;
struct ScratchEntry {
  char path[4096];
  int folder;
};
ScratchEntry g_scratch[kMaxScratch];
volatile sig_atomic_t g_nscratch = 0;
volatile sig_atomic_t g_child = 0;
// Set by a program that embeds the tool (set_embedded): no signal handler is installed.
std::atomic<int> g_embedded{0};
struct sigaction g_old_int {}, g_old_term {};

extern "C" void undo_scratch_and_die(int sig) {
  if (g_child > 0) {
    ::kill(static_cast<pid_t>(g_child), SIGKILL);
    ::waitpid(static_cast<pid_t>(g_child), nullptr, 0);
  }
  for (int i = g_nscratch - 1; i >= 0; --i) {
    if (g_scratch[i].folder) ::rmdir(g_scratch[i].path);
    else ::unlink(g_scratch[i].path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void block_signals(sigset_t* old) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &s, old);
}
}  // namespace

ScratchScope::ScratchScope() : mark_(g_nscratch) {}

ScratchScope::~ScratchScope() {
  std::error_code ec;
  for (int i = g_nscratch - 1; i >= mark_; --i) {
    if (!g_scratch[i].folder) fs::remove(g_scratch[i].path, ec);
    else if (!keep_folders_) fs::remove(g_scratch[i].path, ec);  // only when empty
  }
  sigset_t old;
  block_signals(&old);
  g_nscratch = mark_;
  if (mark_ == 0 && g_embedded.load() == 0) {
    ::sigaction(SIGINT, &g_old_int, nullptr);
    ::sigaction(SIGTERM, &g_old_term, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
}

void ScratchScope::add(const std::string& path, bool folder) {
  KB_INTERNAL_CHECK(g_nscratch < kMaxScratch && path.size() < sizeof g_scratch[0].path,
                    "too many scratch files, or a path too long to remove on a signal: " + path);
  sigset_t old;
  block_signals(&old);
  std::strcpy(g_scratch[g_nscratch].path, path.c_str());
  g_scratch[g_nscratch].folder = folder ? 1 : 0;
  if (g_nscratch == 0 && g_embedded.load() == 0) {  // an embedding program handles its own signals
    struct sigaction sa {};
    sa.sa_handler = undo_scratch_and_die;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);  // one handler at a time: the other signal waits
    sigaddset(&sa.sa_mask, SIGTERM);
    ::sigaction(SIGINT, &sa, &g_old_int);
    ::sigaction(SIGTERM, &sa, &g_old_term);
  }
  g_nscratch = g_nscratch + 1;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
}

void ScratchScope::folders_for(const std::string& path) {
  const fs::path p(path);
  if (!p.has_parent_path()) return;
  std::error_code ec;
  std::vector<fs::path> made;  // innermost first
  for (fs::path q = p.parent_path(); !q.empty() && !fs::exists(q, ec); q = q.parent_path()) {
    made.push_back(q);
    if (q == q.root_path() || q.parent_path() == q) break;
  }
  for (auto it = made.rbegin(); it != made.rend(); ++it) add(it->string(), true);  // outermost first
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw InputError(p.parent_path().string() + ": cannot create folder: " + ec.message());
}

void ScratchScope::child(long pid) { g_child = static_cast<sig_atomic_t>(pid); }

// Between posix_spawnp's return and child() a signal's handler would not know the child,
// and would leave it running: the signals are held until both are done. The child starts
// with the caller's mask, not this one.
int ScratchScope::spawn_child(long* pid, const posix_spawn_file_actions_t* files, char* const argv[]) {
  sigset_t old;
  block_signals(&old);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &old);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t p = 0;
  const int rc = ::posix_spawnp(&p, argv[0], files, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  *pid = rc == 0 ? p : 0;
  g_child = static_cast<sig_atomic_t>(*pid);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  return rc;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, [&](std::ostream& out) { out << content; });
}

AtomicFile::AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp" + std::to_string(::getpid())) {
  const fs::path p(path);
  std::error_code ec;
  // Only regular files are replaced: a device, a FIFO or a folder at `path` is refused,
  // never swapped for a regular file.
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError(path + ": not a regular file (a folder, device or FIFO); refusing to replace it");
  // Folders created for this file are removed again if it cannot be written.
  scratch_.folders_for(path);
  scratch_.add(tmp_);
  out_ = std::make_unique<std::ofstream>(tmp_, std::ios::binary | std::ios::trunc);
  if (!*out_) throw InputError(path + ": cannot write file");
  errno = 0;
}

AtomicFile::~AtomicFile() = default;

std::ostream& AtomicFile::out() { return *out_; }

void AtomicFile::commit() {
  out_->close();
  // A full disk or a file-size limit (ulimit -f): the environment's, not the input's.
  if (!*out_) throw EnvironmentError(path_ + ": write failed" + (errno ? " (" + std::string(std::strerror(errno)) + ")" : std::string()));
  std::error_code ec;
  fs::rename(tmp_, fs::path(path_), ec);
  if (ec) throw InputError(path_ + ": cannot rename into place");
  scratch_.keep_folders();
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  AtomicFile file(path);
  write(file.out());
  file.commit();
}

void check_output_path(const std::string& flag, const std::string& path, const std::string& example) {
  if (path.empty()) return;
  std::error_code ec;
  // What the writer will need: a file name (not a folder's), short enough that its
  // temporary sibling NAME.tmpPID fits the name limit, on a path the system accepts.
  if (path.back() == '/') throw InputError(flag + " " + path + ": ends in '/', a folder; give a file name, e.g. " + path + example);
  const std::string name = fs::path(path).filename().string();
  if (name.size() + std::string(".tmp").size() + 10 > 255)
    throw InputError(flag + " " + path.substr(0, 64) + "...: the file name is longer than " + std::to_string(255 - 14) + " bytes");
  if (fs::absolute(fs::path(path), ec).string().size() + 14 >= 4096)
    throw InputError(flag + " " + path.substr(0, 64) + "...: the path is longer than the system's limit (4096 bytes)");
  if (fs::is_directory(path, ec))
    throw InputError(flag + " " + path + ": is a folder; give a file name, e.g. " + path + "/" + example);
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw InputError(flag + " " + path + ": not a regular file (a device or FIFO); refusing to replace it");
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

namespace {
// Opens `path` for reading without blocking (a FIFO with no writer would) and refuses
// anything but a regular file: the descriptor, or InputError naming the file.
int open_input(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ":1:1: (file): cannot open file (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw InputError(path + ":1:1: (file): " +
                     (dir ? std::string("is a folder, expected a file") : std::string("not a regular file (a FIFO, device or socket); expected a file")));
  }
  return fd;
}
}  // namespace

void check_input_file(const std::string& path) { ::close(open_input(path)); }

void check_outputs_distinct(const std::vector<FlagPath>& inputs, const std::vector<FlagPath>& outputs) {
  struct Id {
    bool exists;
    dev_t dev;
    ino_t ino;
    std::string path;
    bool operator==(const Id& o) const { return exists == o.exists && (exists ? dev == o.dev && ino == o.ino : path == o.path); }
  };
  auto id = [](const std::string& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) return Id{true, st.st_dev, st.st_ino, ""};
    std::error_code ec;
    return Id{false, 0, 0, fs::absolute(p, ec).lexically_normal().string()};
  };
  std::vector<std::pair<const FlagPath*, Id>> seen;
  for (const FlagPath& in : inputs)
    if (!in.second.empty()) seen.push_back({&in, id(in.second)});
  const std::size_t n_inputs = seen.size();
  for (const FlagPath& out : outputs) {
    if (out.second.empty()) continue;
    const Id o = id(out.second);
    for (std::size_t k = 0; k < seen.size(); ++k)
      if (seen[k].second == o)
        throw InputError(out.first + " " + out.second + ": the same file as " +
                         (k < n_inputs ? "the input " : "") + seen[k].first->first + " " + seen[k].first->second +
                         (k < n_inputs ? "; write the output elsewhere" : "; give each output its own file"));
    seen.push_back({&out, o});
  }
}

void check_utf8(const std::string& path, const std::string& text) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && c != 0 && i + len <= text.size() && !(len == 2 && c < 0xc2) && !(len == 4 && c > 0xf4);
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (!ok)
      throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": (file): not UTF-8 text" +
                       (c == 0 ? " (a NUL byte: UTF-16 or binary?)" : "") + "; input files are UTF-8");
    if (c == '\n') ++line, col = 1;
    else ++col;
    i += len;
  }
}

std::string shown_path(const std::string& path) { return path == "-" ? "<stdin>" : path; }

namespace {
// Reads `fd` to its end and closes it; InputError naming `shown` when it cannot be read or
// holds more than `max_bytes` (`larger`: what the error then says of it).
std::string read_to_end(int fd, const std::string& shown, std::size_t max_bytes, const std::string& larger) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(shown + ":1:1: (file): cannot read file (" + std::strerror(err) + ")");
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      ::close(fd);
      throw InputError(shown + ":1:1: (file): larger than " + larger);
    }
  }
  ::close(fd);
  return text;
}
}  // namespace

std::string read_stream(const std::string& path, std::size_t max_bytes) {
  const std::string shown = shown_path(path);
  const int fd = path == "-" ? ::dup(0) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // a FIFO waits for its writer
  if (fd < 0) throw InputError(shown + ":1:1: (file): cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw InputError(shown + ":1:1: (file): " +
                     (dir ? std::string("is a folder, expected a file") : std::string("a device or socket; expected a file or a pipe")));
  }
  return read_to_end(fd, shown, max_bytes, std::to_string(max_bytes >> 10) + " KiB; not an input of this kind");
}

std::string read_file(const std::string& path) {
  // At most kMaxInputBytes: a larger file is not an input file of this program.
  return read_to_end(open_input(path), path, kMaxInputBytes, std::to_string(kMaxInputBytes >> 20) + " MiB; not an input file");
}

namespace {
// Starts a program with these arguments (searched on PATH, no shell): standard output to
// /dev/null, standard error to the file `err` (or /dev/null, where `err` < 0), standard
// input from `in` (or the caller's, where `in` < 0). Returns its pid, or -1 when it could
// not be started.
pid_t spawn_program(const std::vector<std::string>& args, int err = -1, int in = -1) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (err >= 0) posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO);
  else posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (in >= 0) posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits for a started program: its wait status, or -1.
int wait_program(pid_t pid) {
  if (pid < 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return status;
}

// Runs a program to its end (spawn_program, then wait_program).
int run_program(const std::vector<std::string>& args) { return wait_program(spawn_program(args)); }

// Finds matplotlib without importing it (an import costs a third of a second, the lookup
// a few milliseconds): the scripts import it once they run.
bool can_plot(const std::string& python) {
  const int status = run_program({python, "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('matplotlib') is None)"});
  return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A file without a name for a figure script's messages (read back once it ends): nothing is
// left behind, however this process ends. -1 where none can be made (then they are lost).
int anonymous_file() {
  const int fd = ::memfd_create("kernbench-plot-messages", MFD_CLOEXEC);
  if (fd >= 0) return fd;
  std::error_code ec;
  std::string path = (fs::temp_directory_path(ec) / "kernbench-plot-XXXXXX").string();
  const int tmp = ::mkostemp(path.data(), O_CLOEXEC);
  if (tmp >= 0) ::unlink(path.c_str());
  return tmp;
}

std::string read_back(int fd) {
  std::string text;
  if (fd < 0 || ::lseek(fd, 0, SEEK_SET) != 0) return text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

// A figure script started before its input exists (`--args-on-stdin`): it imports matplotlib
// while the bench simulates, then reads its arguments from its standard input, each ended by
// a NUL byte, to the end. Its standard input is a socket, so that writing to a script that
// has died is an error (MSG_NOSIGNAL), not a SIGPIPE. One never given its arguments (the
// command failed) is abandoned when the command ends: its input closed, it exits by itself
// (its exit handlers remove what matplotlib made), killed only if it has not within 3 s.
struct WarmScript {
  std::string script;
  pid_t pid = -1;
  pid_t owner = -1;   // the process that started it (a forked child leaves it alone)
  int to_child = -1;  // the write end of its standard input
  int err = -1;       // its standard error
  void start(const std::string& python, const std::string& name) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return;  // then it starts cold, later
    err = anonymous_file();
    pid = spawn_program({python, data_dir() + "/tools/plot/" + name, "--args-on-stdin"}, err, fds[0]);
    ::close(fds[0]);
    if (pid < 0) {
      ::close(fds[1]);
      release_err();
      return;
    }
    script = name, to_child = fds[1], owner = ::getpid();
  }
  // Hands `name` its arguments: true where it now runs with them, and the caller owns its
  // pid and its standard error (this holds nothing more); false where no such script waits.
  bool hand_over(const std::string& name, const std::vector<std::string>& args, pid_t* child, int* child_err) {
    if (pid < 0 || owner != ::getpid() || script != name) return false;
    std::string text;
    for (const std::string& a : args) text += a + '\0';
    const bool sent = send_all(to_child, text);
    ::close(to_child);
    to_child = -1;
    if (!sent) {
      abandon();
      return false;
    }
    *child = pid, *child_err = err;
    pid = -1, err = -1, script.clear();
    return true;
  }
  static bool send_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done == text.size();
  }
  void release_err() {
    if (err >= 0) ::close(err);
    err = -1;
  }
  void abandon() {
    if (pid < 0 || owner != ::getpid()) return;
    if (to_child >= 0) ::close(to_child);
    to_child = -1;
    int status = 0;
    for (int waited_ms = 0;; waited_ms += 10) {
      const pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid || (got < 0 && errno != EINTR)) break;
      if (waited_ms >= 3000) {
        ::kill(pid, SIGKILL);
        wait_program(pid);
        break;
      }
      ::usleep(10000);
    }
    release_err();
    pid = -1, script.clear();
  }
  ~WarmScript() { abandon(); }
};

std::string search_plot_python() {
  if (const char* env = std::getenv("KERNBENCH_PYTHON")) return can_plot(env) ? env : "";
  for (const char* c : {"python3", "/usr/bin/python3"})
    if (can_plot(c)) return c;
  return "";
}

// Declared before the search's future, so destroyed after it: an unfinished search (which
// may start the script) completes before the script is abandoned.
WarmScript warm_script;
std::once_flag plot_python_once;
std::shared_future<std::string> plot_python;
}  // namespace

void prefetch_plot_python(const std::string& script) {
  std::call_once(plot_python_once, [script] {
    plot_python = std::async(std::launch::async, [script] {
                    std::string python = search_plot_python();
                    if (!python.empty() && !script.empty()) warm_script.start(python, script);
                    return python;
                  }).share();
  });
}

void end_plot_prefetch() {
  if (plot_python.valid()) plot_python.wait();
  warm_script.abandon();
}

std::string find_plot_python() {
  prefetch_plot_python();
  return plot_python.get();
}

void render_figures(const std::string& script, const std::string& json_path, const std::string& out_dir) {
  const std::string python = find_plot_python();
  if (python.empty())
    throw InputError("figures: matplotlib is not available to python3; install it with "
                     "'apt-get install python3-matplotlib' or 'python3 -m pip install matplotlib' "
                     "(numbers were written to " + out_dir + ")");
  // An argument vector, no shell: paths are data, whatever characters they hold.
  const std::vector<std::string> args = {"--in", json_path, "--out", out_dir};
  int err = -1;
  pid_t pid = -1;
  if (!warm_script.hand_over(script, args, &pid, &err)) {
    std::vector<std::string> argv = {python, data_dir() + "/tools/plot/" + script};
    argv.insert(argv.end(), args.begin(), args.end());
    err = anonymous_file();
    pid = spawn_program(argv, err);
  }
  const int status = wait_program(pid);
  std::string text = read_back(err);
  if (err >= 0) ::close(err);
  if (status == 0) return;
  // The script's last line, without its own "error: " prefix (main adds one).
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string line = text.substr(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  const std::string said = line.rfind("error: ", 0) == 0 ? line.substr(7) : line;
  if (status < 0) throw EnvironmentError("figures: cannot start " + python);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw InputError(said.empty() ? script + ": rejected its input" : said);
  const std::string how = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                            : "signal " + std::to_string(WTERMSIG(status));
  throw InternalError("figure script " + script + " failed (" + how + ")" + (said.empty() ? "" : ": " + said), __FILE__,
                      __LINE__);
}

void set_embedded(bool e) { g_embedded.store(e ? 1 : 0); }
bool embedded() { return g_embedded.load() != 0; }

std::ostream& cli_out() { return std::cout; }
std::ostream& cli_err() { return std::cerr; }

namespace {
void vstream_printf(std::ostream& os, const char* format, va_list args) {
  char small[1024];
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(small, sizeof small, format, args);
  if (n < 0) {
    va_end(again);
    return;
  }
  if (static_cast<std::size_t>(n) < sizeof small) {
    os.write(small, n);
  } else {
    std::string big(static_cast<std::size_t>(n) + 1, '\0');
    std::vsnprintf(big.data(), big.size(), format, again);
    os.write(big.data(), n);
  }
  va_end(again);
}
}  // namespace

void stream_printf(std::ostream& os, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vstream_printf(os, format, args);
  va_end(args);
}

void cli_printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vstream_printf(std::cout, format, args);
  va_end(args);
}

// A user's text in a one-line message: control characters written as \xNN.
std::string escape_text(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace kb
