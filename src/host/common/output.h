// Writing results: atomic files, and the Python that renders figures.
#pragma once

#include <spawn.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace kb {

// Scratch files and folders of one piece of work: removed when the scope ends (the folders
// only if still empty, and not after keep_folders()), and, should SIGINT or SIGTERM arrive
// while the scope lives, removed by the signal handler, after it kills the child process
// named by child(). Scopes nest; at most 24 entries in all.
class ScratchScope {
 public:
  ScratchScope();
  ~ScratchScope();
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;
  void add(const std::string& path, bool folder = false);
  // Creates the folders `path` needs, each added as scratch (InputError when it cannot).
  void folders_for(const std::string& path);
  // The work succeeded: the folders made for it stay.
  void keep_folders() { keep_folders_ = true; }
  // A running child to kill on a signal (0: none).
  void child(long pid);
  // Starts argv[0] (searched on PATH) with these file actions (null: none) and names it the
  // child, with no gap between the two: SIGINT and SIGTERM wait while it starts, so a signal
  // that finds it running also finds it named. Returns posix_spawnp's result (0: started).
  int spawn_child(long* pid, const posix_spawn_file_actions_t* files, char* const argv[]);

 private:
  int mark_;
  bool keep_folders_ = false;
};

// A file written piece by piece (a run's rows as they come) through a temporary file in the
// same folder, made with the folders it needs; commit() renames it into place. Destroyed
// before commit() (an exception), it leaves nothing behind. Like ScratchScope, these nest.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  std::ostream& out();
  void commit();

 private:
  ScratchScope scratch_;
  std::string path_, tmp_;
  std::unique_ptr<std::ofstream> out_;
};

// Writes `content` to `path` through a temporary file in the same folder and a rename,
// creating folders as needed; readers never see a half-written file.
void write_file_atomic(const std::string& path, const std::string& content);
// The same, the content written by `write` piece by piece (a document too large to hold
// whole); when `write` throws, nothing is left behind and the exception goes on.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);
// The whole file; InputError ("FILE:1:1: ...") when it cannot be read or holds more than
// kMaxInputBytes (a topology, space or result file is far smaller; /dev/zero is endless).
constexpr std::size_t kMaxInputBytes = std::size_t{16} << 20;
std::string read_file(const std::string& path);
// The text of an input read once from a stream: "-" is standard input, and a FIFO (or a
// pipe's /dev/fd/N) is read to its end as a regular file is; a folder, device or socket is
// refused. At most `max_bytes`; errors name the input `shown` ("<stdin>" for "-").
std::string read_stream(const std::string& path, std::size_t max_bytes);
// How an input path is named in errors: "<stdin>" for "-".
std::string shown_path(const std::string& path);
// Throws InputError ("FILE:1:1: (file): ...") unless `path` names a regular file that can be
// opened for reading: a folder, FIFO, device or socket is refused before it is read.
void check_input_file(const std::string& path);
// Throws InputError ("FILE:LINE:COL: (file): not UTF-8 text ...") unless `text` is UTF-8
// without NUL bytes (a UTF-16 file, with or without its BOM, is refused).
void check_utf8(const std::string& path, const std::string& text);
// Throws InputError, before any work, when an output (flag, path) is one of the inputs, or
// the same file as another output: by device and inode where the file exists, else by its
// absolute, normalised path. Empty paths are skipped.
using FlagPath = std::pair<std::string, std::string>;
void check_outputs_distinct(const std::vector<FlagPath>& inputs, const std::vector<FlagPath>& outputs);
// Throws InputError, before any work, when `path` could not be written later: a folder, or
// under a folder that exists but cannot be written. `example` names a file for the hint.
void check_output_path(const std::string& flag, const std::string& path, const std::string& example);

// A Python 3 that can import matplotlib: $KERNBENCH_PYTHON, else python3 on PATH, else
// /usr/bin/python3. Empty when none can. Searched once per process.
std::string find_plot_python();
// Starts that search in the background (a command that will draw figures calls it first, so
// that the interpreters' start-up overlaps the simulation); find_plot_python waits for it.
// With a figure script's name, the search then starts that script too, to import matplotlib
// while the simulation runs; render_figures of that script hands it its arguments.
void prefetch_plot_python(const std::string& script = "");
// Ends what prefetch_plot_python started for a command: a script it started and that was
// never given its arguments exits (its input closed), or is killed after 3 s.
void end_plot_prefetch();

// Runs tools/plot/<script> --in JSON --out DIR. Throws InputError with a one-line
// explanation (how to install matplotlib) when no suitable Python is found, InputError
// with the script's own line when it rejects its input (its exit code 2), and
// InternalError when it fails otherwise.
void render_figures(const std::string& script, const std::string& json_path, const std::string& out_dir);

// Where the shipped data lives (topologies/, tools/plot/, docs/diagrams/):
// $KERNBENCH_DATA_DIR if set; else, from the binary's folder upwards, the first that holds
// share/kernbench-gpu/ (the installed layout, <prefix>/bin and <prefix>/share; a build
// folder has one that links into the source tree) or is itself such a data folder.
std::string data_dir();
// A data folder that data_dir() returns unless $KERNBENCH_DATA_DIR is set: the Python
// module's own (its process is python, so the binary's folder says nothing). Empty: none.
void set_data_dir(const std::string& path);

// A user's text in a one-line message: control characters written as \xNN.
std::string escape_text(const std::string& s);

// ---- the text a user reads, and another program's process --------------------------------

// Whether this process is another program's (the Python module): then no signal handler is
// installed (the program handles its own SIGINT) and no figure script is started ahead of a
// bench (the process outlives the command). Set once, by that program; the command line
// leaves it false.
void set_embedded(bool embedded);
bool embedded();
// The command line's standard output and standard error (the library writes only to the
// streams its callers hand it: reporters and requests).
std::ostream& cli_out();
std::ostream& cli_err();
// printf to a stream.
void stream_printf(std::ostream& os, const char* format, ...) __attribute__((format(printf, 2, 3)));
// printf to cli_out().
void cli_printf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kb
