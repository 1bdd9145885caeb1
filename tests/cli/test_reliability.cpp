// Hostile input: paths are never parsed by a shell, outputs never replace special files, and
// flags that do nothing in a run are still checked.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;


TEST(Reliability, PathsReachThePlotScriptAsData) {
  if (!have_matplotlib()) GTEST_SKIP() << "not run: no Python with matplotlib here (tools/setup.sh installs it)";
  const std::string cwd = fresh_dir("kb_inject_cwd");
  fs::create_directories(cwd);
  const std::string dir = cwd + "/i'; touch INJECTED; echo '";
  fs::create_directories(dir);
  fs::copy_file(kRoot + "/docs/diagrams/gemm/gemm_sweep.json", dir + "/gemm_sweep.json");
  // The folder name as one shell-quoted argument: '...'\''...'
  std::string quoted = "'";
  for (char c : dir) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  const Result r = run("plot --bench milestone-1h-gemm --in " + quoted, "cd '" + cwd + "' && ");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir + "/gemm_roofline.png"));
  EXPECT_FALSE(fs::exists(cwd + "/INJECTED"));
  EXPECT_FALSE(fs::exists(dir + "/INJECTED"));
  // A bench's script, started before the bench runs, gets its paths on its standard input
  // instead: the same folder name, and one with a line break in it.
  for (const std::string& out : {dir + "/fast", cwd + "/two\nlines; touch INJECTED"}) {
    std::string q = "'";
    for (char c : out) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    q += "'";
    const Result f = run("run --bench milestone-1h-gemm --fast --out " + q, "cd '" + cwd + "' && ");
    EXPECT_EQ(f.code, 0) << f.err;
    EXPECT_TRUE(fs::exists(out + "/gemm_roofline.png")) << out;
  }
  EXPECT_FALSE(fs::exists(cwd + "/INJECTED"));
  EXPECT_FALSE(fs::exists(dir + "/INJECTED"));
}

TEST(Reliability, OutputsNeverReplaceSpecialFiles) {
  const std::string dir = fresh_dir("kb_fifo");
  fs::create_directories(dir);
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_input_error(run("sweep gemm --m 16 --n 16 --k 16 --recheck 0 --out '" + fifo + "'"),
                     "not a regular file (a device or FIFO); refusing to replace it");
  expect_input_error(run("eval gemm --m 16 --n 16 --k 16 --trace '" + fifo + "'"), "refusing to replace it");
  expect_input_error(run("sweep gemm --m 16 --n 16 --k 16 --recheck 0 --csv /dev/null"), "refusing to replace it");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(Reliability, UnusedFlagsAreStillChecked) {
  expect_input_error(run("eval gemm --m 16 --n 16 --k 16 --engine reference --backend bogus"),
                     "--backend bogus: expected auto, cuda or omp");
  expect_input_error(run("eval gemm --m 16 --n 16 --k 16 --topology ''"), "--topology '': an empty value");
  expect_input_error(run("sweep gemm --m 16 --n 16 --k 16 --topology ''"), "--topology '': an empty value");
}

// The same text means the same thing everywhere: a topology key is one name and appears
// once; an integer is decimal digits and nothing else; a value's control characters are
// escaped so that the error stays one line; an input file is at most 16 MiB.
TEST(Reliability, StrictInput) {
  const std::string dir = fresh_dir("kb_strict");
  fs::create_directories(dir);
  const std::string def = kTopo + "/default.yaml";
  copy_edited(def, dir + "/dup.yaml", "schema_version: 1\n", "schema_version: 1\nschema_version: 1\n");
  const Result dup = run("topo check '" + dir + "/dup.yaml'");
  expect_input_error(dup, "schema_version: given twice (first at line");
  EXPECT_NE(dup.err.find(dir + "/dup.yaml:"), std::string::npos);
  copy_edited(def, dir + "/dot.yaml", "schema_version: 1\n", "schema_version: 1\nsystem.sips: 4\n");
  expect_input_error(run("topo check '" + dir + "/dot.yaml'"), "system.sips: unknown key (nest it");
  copy_edited(def, dir + "/space.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: \" 819\"");
  expect_input_error(run("topo check '" + dir + "/space.yaml'"), "cube.hbm.bandwidth_gbps: expected an integer (got ' 819')");
  copy_edited(def, dir + "/nul.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: \"15\\0abc\"");
  expect_input_error(run("topo check '" + dir + "/nul.yaml'"), "cube.hbm.bandwidth_gbps: expected an integer");
  expect_input_error(run("topo check '" + def + "' --set 'cube.hbm.bandwidth_gbps=+819'"), "expected an integer (got '+819')");
  // A newline in a value: one line, the newline written as \x0a.
  const Result nl = run("topo check '" + def + "' --set \"cube.hbm.bandwidth_gbps=$(printf '8\\n19x')\"");
  EXPECT_EQ(nl.code, 2);
  EXPECT_EQ(std::count(nl.err.begin(), nl.err.end(), '\n'), 1) << nl.err;
  EXPECT_NE(nl.err.find("8\\x0a19x"), std::string::npos) << nl.err;
  expect_input_error(run("topo check /dev/zero"), "not a regular file");
  {
    const std::string big = fresh_dir("kb_big_input.yaml");
    std::ofstream(big) << std::string((std::size_t{16} << 20) + 1, '#');
    expect_input_error(run("topo check '" + big + "'"), "larger than 16 MiB");
    std::filesystem::remove(big);
  }
}

// A place results cannot go is an error before any work, not after it.
TEST(Reliability, UnwritableOutputIsFoundFirst) {
  const Result r = run("run --bench milestone-1h-gemm --out /proc/kb-results");
  expect_input_error(r, "--out /proc/kb-results/gemm_sweep.json: cannot write in /proc");
  EXPECT_EQ(r.out.find("parity"), std::string::npos);
  const std::string file = fresh_dir("kb_out_is_a_file");
  std::ofstream(file) << "x";
  expect_input_error(run("run --bench milestone-gqa-decode-4cases --out '" + file + "'"), "is not a folder");
  expect_input_error(run("sweep gemm --m 16 --n 16 --k 16 --recheck 0 --out /proc/kb.json"), "cannot write in /proc");
}

// A bound on a child's peak memory, MiB: `plain`, or more under ASan, whose quarantine of
// freed blocks and shadow memory come on top.
long memory_bound_mib(long plain) {
#if defined(__SANITIZE_ADDRESS__)
  (void)plain;
  return 1536;
#else
  return plain;
#endif
}

// The peak resident memory of any child this test process has waited for, MiB.
long children_peak_mib() {
  struct rusage ru {};
  EXPECT_EQ(::getrusage(RUSAGE_CHILDREN, &ru), 0);
  return ru.ru_maxrss / 1024;
}

// eval --trace writes the trace event by event: a 200,000-op reference run with its trace
// needs about what it needs without one (it held 3.5 KB per op, 700 MB here).
TEST(Reliability, TracesAreStreamed) {
  const std::string dir = fresh_dir("kb_large_trace");
  fs::create_directories(dir);
#if defined(__SANITIZE_ADDRESS__)
  const std::int64_t m = 1024;  // the same paths at half the size: under ASan the bound is loose anyway
#else
  const std::int64_t m = 2048;
#endif
  const Result r = run("eval gemm --m " + std::to_string(m) + " --n 2048 --k 4096 --tile-m 64 --tile-n 64 --tile-k 64 "
                       "--engine reference --trace '" + dir + "/t.json'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(children_peak_mib(), memory_bound_mib(300));
  const nlohmann::json t = load(dir + "/t.json");
  std::int64_t ops = 0;
  for (const auto& e : t.at("traceEvents")) ops += e.at("ph") == "X";
  EXPECT_GT(ops, 190000 * m / 2048);
  EXPECT_EQ(t.at("displayTimeUnit"), "ns");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Out of memory anywhere is exit 3 with one line saying so, never an abort, and leaves no
// file behind.
TEST(Reliability, OutOfMemoryIsExitThree) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under ASan an address-space limit stops the sanitizer's own reservations, not the program's";
#else
  // 25 million ops of reference run need several GB; 1 GB of address space is plenty to start.
  const std::string dir = fresh_dir("kb_oom");
  const Result r = run("eval gemm --m 16384 --n 16384 --k 8192 --tile-m 64 --tile-n 64 --tile-k 64 --engine reference "
                       "--max-ops 2147483647 "
                       "--trace '" + dir + "/t.json'",
                       "ulimit -v 1000000; ");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(r.err, "error: out of memory: the request needs more memory than this machine gives it\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(dir));
#endif
}

// SIGTERM while a sweep writes its document: the temporary file and the folders made for it
// are removed, and the signal still ends the program.
TEST(Reliability, ASignalMidWriteLeavesNothing) {
  const std::string dir = fresh_dir("kb_signal");
  fs::create_directories(dir);
  const std::string folder = dir + "/new/deeper", out = folder + "/s.json";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(KB_CLI_EXE, KB_CLI_EXE, "sweep", "gemm", "--m", "1:512", "--n", "1:256", "--k", "64", "--group", "m,n",
            "--recheck", "0", "--progress-every", "0", "--out", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the temporary file is being written (a 322 MB document: seconds).
  bool writing = false;
  int status = 0;
  for (int ms = 0; ms < 120000 && !writing; ++ms) {
    std::error_code ec;
    if (fs::is_directory(folder, ec))
      for (const auto& e : fs::directory_iterator(folder, ec))
        writing |= e.path().filename().string().rfind("s.json.tmp", 0) == 0;
    if (!writing) {
      ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the sweep ended before its write was seen";
      ::usleep(1000);
    }
  }
  ASSERT_TRUE(writing);
  ::kill(pid, SIGTERM);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_FALSE(fs::exists(dir + "/new")) << "the folders made for the output are removed";
  EXPECT_TRUE(fs::is_empty(dir));
}

// SIGTERM while dot renders a diagram: dot is stopped, and the DOT source, dot's messages,
// the temporary output and the folder made for them are removed. A stand-in `dot` on PATH
// says its process id and waits, so the signal finds it running.
TEST(Reliability, ASignalWhileDotRendersLeavesNothing) {
  const std::string dir = fresh_dir("kb_signal_dot");
  fs::create_directories(dir + "/bin");
  std::ofstream(dir + "/bin/dot") << "#!/bin/sh\necho $$ > '" << dir << "/dot.pid.tmp'\nmv '" << dir << "/dot.pid.tmp' '"
                                  << dir << "/dot.pid'\nexec sleep 60\n";
  fs::permissions(dir + "/bin/dot", fs::perms::owner_all);
  const std::string out = dir + "/new/deeper/t.png", topo = kTopo + "/default.yaml";
  const std::string path = dir + "/bin:" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("PATH", path.c_str(), 1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(KB_CLI_EXE, KB_CLI_EXE, "topo", "diagram", topo.c_str(), "-o", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  for (int ms = 0; ms < 60000 && !fs::exists(dir + "/dot.pid"); ++ms) {
    ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "topo diagram ended before dot started";
    ::usleep(1000);
  }
  ASSERT_TRUE(fs::exists(dir + "/dot.pid"));
  EXPECT_TRUE(fs::exists(dir + "/new/deeper")) << "dot renders beside the output";
  pid_t dot = 0;
  std::ifstream(dir + "/dot.pid") >> dot;
  ASSERT_GT(dot, 0);
  ::kill(pid, SIGTERM);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(::kill(dot, 0), -1) << "dot is still running";
  EXPECT_FALSE(fs::exists(dir + "/new")) << "the folders made for the output are removed";
  ::kill(dot, SIGKILL);  // should the check above fail
}

// A sweep with many groups writes its document row by row, and merge drops a shard's rows
// as it reads them: memory stays far below the document's size (a 2^20-group document
// held whole needed 11.7 GB; these 2^16-group shards, about 1.2 GB each).
TEST(Reliability, LargeSweepDocumentsAreStreamed) {
  const std::string dir = fresh_dir("kb_large_sweep");
  fs::create_directories(dir);
#if defined(__SANITIZE_ADDRESS__)
  // The same paths at a quarter of the size: under ASan the memory bound is loose anyway, and
  // each row costs ten times as long.
  const std::int64_t rows = 64;
#else
  const std::int64_t rows = 256;
#endif
  const std::string sweep = "sweep gemm --m 1:" + std::to_string(rows) + " --n 1:256 --k 64 --group m,n --recheck 0 --progress-every 0 ";
  for (int i = 0; i < 2; ++i) {
    const Result r = run(sweep + "--shard " + std::to_string(i) + "/2 --out '" + dir + "/s" + std::to_string(i) + ".json'");
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const Result m = run("merge '" + dir + "/s0.json' '" + dir + "/s1.json' --out '" + dir + "/m.json'");
  ASSERT_EQ(m.code, 0) << m.err;
  const long peak_mib = children_peak_mib();
  std::error_code ec;
  const auto bytes = fs::file_size(dir + "/m.json", ec);
  EXPECT_GT(bytes, (std::uintmax_t{100} << 20) * static_cast<std::uintmax_t>(rows) / 256);  // one row per group
  EXPECT_LT(peak_mib, memory_bound_mib(400)) << "peak resident memory of a sweep or the merge, MiB";
  // Every group is in it, in order, and the file is whole.
  std::ifstream in(dir + "/m.json");
  std::string line, last;
  std::int64_t groups = 0;
  while (std::getline(in, line)) {
    if (line == "      \"group\": {") ++groups;
    last = line;
  }
  EXPECT_EQ(groups, rows * 256);
  EXPECT_EQ(last, "}");
  fs::remove_all(dir, ec);
}

}  // namespace
