// Running the kernbench-gpu binary as a user would, for the CLI tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "host/families/family.h"

namespace kb::clitest {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

// A shell command line, its standard output and error captured.
inline Result run_shell(const std::string& command) {
  const std::string dir = ::testing::TempDir();
  // Tests run in parallel processes: name the capture files after the test and process.
  const std::string tag = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
                          std::to_string(::getpid());
  const std::string out = dir + "/kb_cli_out_" + tag + ".txt", err = dir + "/kb_cli_err_" + tag + ".txt";
  const std::string cmd = "{ " + command + "; } >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// kernbench-gpu with these arguments (`env`: assignments or commands before it).
inline Result run(const std::string& args, const std::string& env = "") {
  return run_shell(env + "'" + KB_CLI_EXE + "' " + args);
}

inline const std::string kTopo = KB_TEST_TOPOLOGIES;
inline const std::string kRoot = KB_TEST_DATA "/../..";  // the source tree

inline std::string fresh_dir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove_all(p);
  return p.string();
}

// One line on stderr, starting "error: ", exit 2, nothing on stdout.
inline void expect_input_error(const Result& r, const std::string& fragment) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// Writes `to`: the file `from` with its first `find` replaced by `replace`.
inline void copy_edited(const std::string& from, const std::string& to, const std::string& find, const std::string& replace) {
  std::ifstream in(from);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find(find);
  EXPECT_NE(at, std::string::npos) << find << " in " << from;
  if (at != std::string::npos) text.replace(at, find.size(), replace);
  std::ofstream(to) << text;
}

// Model files that `model show` must refuse: each the good file `from` with one edit, written
// to DIR/FILE.json, refused in one line that names the file and, after it, `want` (which
// starts at the line:column when it begins with ':').
struct ModelFileEdit {
  std::string file, find, replace, want;
};
inline void expect_model_edits_refused(const std::string& from, const std::string& dir, const std::vector<ModelFileEdit>& edits) {
  for (const ModelFileEdit& c : edits) {
    const std::string path = dir + "/" + c.file + ".json";
    copy_edited(from, path, c.find, c.replace);
    const Result r = run("model show '" + path + "'");
    expect_input_error(r, path + (c.want[0] == ':' ? "" : ":"));
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.file << ": " << r.err;
  }
}

// The command lines that give each axis of family `f` each kind of malformed value, in
// eval and in sweep; the other axes take a well-formed value: their default, an enum's
// first name, or their least value. Each must be exit 2 with one line.
inline std::vector<std::string> bad_axis_values(const kb::Family& f) {
  const std::vector<std::string> bad = {"''", "abc", "0x10", "-3", "1.5", "99999999999999999999999"};
  std::vector<std::string> cases;
  for (const kb::AxisDesc& axis : f.axes)
    for (const std::string& value : bad)
      for (const char* cmd : {"eval", "sweep"}) {
        std::string args = std::string(cmd) + " " + f.name;
        for (const kb::AxisDesc& other : f.axes) {
          const std::string good = !other.fallback.empty() ? other.fallback
                                   : !other.names.empty()  ? other.names[0]
                                                           : std::to_string(std::max<std::int64_t>(other.lo, 1));
          args += " " + other.flag + " " + (other.name == axis.name ? value : good);
        }
        cases.push_back(args);
      }
  return cases;
}

// A JSON file's contents.
inline nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Whether a Python with matplotlib is here (the figures' tests need it).
inline bool have_matplotlib() {
  return std::system("python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0;
}

// The JSON a command that must succeed prints (null, with a failure, when it does not).
inline nlohmann::json run_json(const std::string& args) {
  const Result r = run(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

// Each case's arguments, appended to `base`, are an input error naming its fragment, and
// nothing is written at `out`.
inline void expect_input_errors(const std::string& base, const std::vector<std::pair<std::string, std::string>>& cases,
                                const std::string& out) {
  for (const auto& [args, error] : cases) {
    SCOPED_TRACE(args);
    expect_input_error(run(base + args), error);
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace kb::clitest
