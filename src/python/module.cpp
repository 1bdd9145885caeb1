// kernbench_gpu._core: the tool's commands run in the Python process. A call is the words of
// a command line, run by cli_run under an EmbeddingScope: what the command would print comes
// back as text (the Python layer asks for --json and parses it), so a result is the CLI's by
// construction. Errors become the package's exceptions with the CLI's one-line message; the
// GIL is released while a command runs, and a sweep polls for signals (Ctrl-C) and reports
// progress between its chunks.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "device/backends/backends.h"
#include "host/cli/commands.h"
#include "host/common/error.h"
#include "host/common/output.h"

namespace py = pybind11;

namespace {

// The package's exceptions (created once, when the module is imported).
PyObject* g_input_error = nullptr;
PyObject* g_internal_error = nullptr;
PyObject* g_environment_error = nullptr;

// A command's failure as the package's exception: its class by the CLI's exit code (2 input,
// 4 environment, 3 anything else but no memory, which is the environment's too), its message
// the CLI's line without "error: ".
[[noreturn]] void raise_as_cli(std::exception_ptr error) {
  int code = 3;
  std::string line = kb::cli_error_line(error, &code);
  if (line.rfind("error: ", 0) == 0) line = line.substr(7);
  bool no_memory = false;
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc&) {
    no_memory = true;
  } catch (...) {
  }
  PyObject* type = code == 2 ? g_input_error : (code == 4 || no_memory) ? g_environment_error : g_internal_error;
  PyErr_SetString(type, line.c_str());
  throw py::error_already_set();
}

// Every config's latency, as a buffer (Python's buffer protocol: numpy.asarray takes it
// without a copy, and with no dependence on NumPy's C API or its version).
struct Latencies {
  std::vector<std::int64_t> values;
};

// Runs one command (its words, without the program's name). Returns (exit code, stdout
// text, stderr text, latencies or None). `progress(done, total)` is called between a sweep's
// chunks; a pending signal raises its Python exception there (KeyboardInterrupt), which ends
// the command with nothing written. Commands run one at a time: the tool's scratch files
// (removed as a command ends) and its caches are the process's, not a thread's.
py::tuple run(const std::vector<std::string>& words, const py::object& progress, bool want_latencies,
              std::int64_t max_latencies) {
  std::vector<std::string> argv{"kernbench-gpu"};
  argv.insert(argv.end(), words.begin(), words.end());
  std::ostringstream out, err;
  std::vector<std::int64_t> latencies;
  kb::Embedding e;
  e.out = &out;
  e.err = &err;
  e.progress = [&progress](std::int64_t done, std::int64_t total) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!progress.is_none()) progress(done, total);
  };
  if (want_latencies) {
    e.latencies = &latencies;
    e.max_latencies = max_latencies;
  }
  int rc = 0;
  std::exception_ptr failure;
  {
    py::gil_scoped_release nogil;  // waiting for the lock, too
    static std::mutex one_at_a_time;
    const std::lock_guard<std::mutex> lock(one_at_a_time);
    kb::EmbeddingScope scope(&e);
    try {
      rc = kb::cli_run(argv);
    } catch (const py::error_already_set&) {
      failure = std::current_exception();  // a Python exception from the callback: re-raised as it was
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const py::error_already_set&) {
      throw;
    } catch (...) {
      // A signal that arrived while the command ran outside a sweep's polls wins: the user
      // asked to stop.
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      raise_as_cli(std::current_exception());
    }
  }
  py::object lat = py::none();
  if (want_latencies) lat = py::cast(Latencies{std::move(latencies)});  // moved, not copied
  return py::make_tuple(rc, out.str(), err.str(), lat);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "kernbench-gpu's engines in process (use the kernbench_gpu package, not this module)";
  static py::exception<kb::InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<kb::InternalError> internal_error(m, "InternalError", PyExc_RuntimeError);
  static py::exception<kb::EnvironmentError> environment_error(m, "EnvironmentError", PyExc_OSError);
  g_input_error = input_error.ptr();
  g_internal_error = internal_error.ptr();
  g_environment_error = environment_error.ptr();
  py::class_<Latencies>(m, "Latencies", py::buffer_protocol()).def_buffer([](Latencies& l) {
    return py::buffer_info(l.values.data(), sizeof(std::int64_t), py::format_descriptor<std::int64_t>::format(), 1,
                           {static_cast<py::ssize_t>(l.values.size())}, {static_cast<py::ssize_t>(sizeof(std::int64_t))});
  });
  m.def("version", [] { return std::string(KB_VERSION); }, "the version, as `kernbench-gpu --version` gives it");
  m.def("set_data_dir", &kb::set_data_dir, py::arg("path"),
        "the folder of the shipped data (topologies/, models/, tools/plot/, docs/diagrams/)");
  m.def("data_dir", [] {
    try {
      return kb::data_dir();
    } catch (...) {
      raise_as_cli(std::current_exception());
    }
  });
  m.def("cuda_device_count", [] {
    std::string why;
    return kb::batched::cuda_device_count(&why);
  });
  m.def("run", &run, py::arg("words"), py::arg("progress") = py::none(), py::arg("latencies") = false,
        py::arg("max_latencies") = 0, "runs a command line in process: (exit code, stdout, stderr, latencies)");
}
