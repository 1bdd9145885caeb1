// kernbench_gpu._core: the tool's engines in the Python process, by the typed API
// (src/host/api/): each call builds a request from its arguments, runs it, and returns what
// a reporter kept as Python objects: no command words, no JSON text, nothing printed. Errors
// become the package's exceptions with the CLI's one-line message; the GIL is released
// while a call runs, and a sweep polls for signals (Ctrl-C) and reports progress between its
// chunks.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "device/backends/backends.h"
#include "host/api/bench.h"
#include "host/api/describe.h"
#include "host/api/eval.h"
#include "host/api/merge_shards.h"
#include "host/api/serve.h"
#include "host/api/serve_sweep.h"
#include "host/api/sweep.h"
#include "host/cli/commands.h"  // cli_error_line: the message the command line prints
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

// The process's caches and scratch files are not a thread's: one command at a time.
std::mutex& one_at_a_time() {
  static std::mutex m;
  return m;
}

// Runs `body` as a command of the tool: the GIL released, one command at a time. What it
// throws is raised as the package's exception: a Python exception from a callback as it
// was; else a signal that arrived meanwhile wins (the user asked to stop), or the CLI's one
// line.
template <class Body>
void run_embedded(Body&& body) {
  std::exception_ptr failure;
  {
    py::gil_scoped_release nogil;  // waiting for the lock, too
    const std::lock_guard<std::mutex> lock(one_at_a_time());
    try {
      body();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (!failure) return;
  try {
    std::rethrow_exception(failure);
  } catch (const py::error_already_set&) {
    throw;
  } catch (...) {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    raise_as_cli(std::current_exception());
  }
}

// A JSON value as Python objects, as json.loads would give its text (a non-finite number,
// which the text writes as null, is None).
py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: {
      const double v = j.get<double>();
      return std::isfinite(v) ? py::object(py::float_(v)) : py::object(py::none());
    }
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const nlohmann::json& x : j) l.append(to_python(x));
      return std::move(l);
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d[py::str(it.key())] = to_python(it.value());
      return std::move(d);
    }
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded: break;
  }
  throw std::logic_error("a JSON value of no Python type");
}

// A topology as a request: a file (none: the family's or bench's own) and --set overrides.
kb::api::TopologyRequest topology_request(const std::optional<std::string>& path, const std::vector<std::string>& sets) {
  kb::api::TopologyRequest r;
  r.path = path.value_or(""), r.path_given = path.has_value(), r.sets = sets;
  return r;
}

// The Python reporter: keeps the result's document.
class KeepDocument : public kb::api::EvalReporter {
 public:
  nlohmann::json document;
  void report(const kb::api::EvalResult& r) override { document = kb::api::eval_json(r); }
};

// One config, by the typed API: the family by name, each axis, hardware axis and preset
// given as its text, by name (a preset by its flag). Returns `eval --json`'s document.
py::object eval(const std::string& family, const std::map<std::string, std::string>& axes,
                const std::map<std::string, std::string>& hw_axes, const std::map<std::string, std::string>& presets,
                const std::optional<std::string>& topology, const std::vector<std::string>& sets, const std::string& engine,
                const std::string& backend, const std::string& trace, bool data, const std::optional<std::string>& seed,
                const std::optional<std::string>& max_ops) {
  KeepDocument keep;
  run_embedded([&] {
    kb::api::EvalRequest r;
    r.family = &kb::api::family_named(family);
    r.axes = axes, r.hw_axes = hw_axes, r.presets = presets;
    r.topology = topology_request(topology, sets);
    r.engine = engine, r.backend = backend, r.trace = trace, r.data = data;
    if (seed) r.seed = *seed;
    r.max_ops = max_ops;
    kb::api::eval(r, keep);
  });
  return to_python(keep.document);
}

// serve's own options by name, into a request: arrivals, isl, osl, lengths, requests, seed,
// max_num_seqs, max_batched_tokens, chunked_prefill, kv_block, slo_ttft, slo_tpot, disagg,
// recheck, out; and the llm family's axes, hardware axes and presets as eval takes them.
void serve_fields(kb::api::ServeRequest& r, const std::map<std::string, std::string>& axes,
                  const std::map<std::string, std::string>& hw_axes, const std::map<std::string, std::string>& presets,
                  const std::optional<std::string>& topology, const std::vector<std::string>& sets, const std::string& backend,
                  const std::map<std::string, std::string>& options, const char* command) {
  r.llm.family = &kb::api::family_named("llm");
  r.llm.axes = axes, r.llm.hw_axes = hw_axes, r.llm.presets = presets;
  r.llm.topology = topology_request(topology, sets);
  r.llm.backend = backend, r.llm.engine = "batched";
  const std::map<std::string, std::string*> fields{
      {"arrivals", &r.arrivals},       {"isl", &r.isl},         {"osl", &r.osl},
      {"lengths", &r.lengths},         {"requests", &r.requests}, {"seed", &r.seed},
      {"max_num_seqs", &r.max_num_seqs}, {"max_batched_tokens", &r.max_batched_tokens},
      {"chunked_prefill", &r.chunked_prefill}, {"kv_block", &r.kv_block}, {"slo_ttft", &r.slo_ttft},
      {"slo_tpot", &r.slo_tpot},       {"recheck", &r.recheck}, {"out", &r.out}, {"disagg", &r.disagg}};
  for (const auto& [name, text] : options) {
    const auto f = fields.find(name);
    if (f == fields.end()) throw kb::InputError(name + ": not an option of " + command);
    *f->second = text;
  }
}

// A serving run, by the typed API. Returns the summary document.
py::object serve(const std::map<std::string, std::string>& axes, const std::map<std::string, std::string>& hw_axes,
                 const std::map<std::string, std::string>& presets, const std::optional<std::string>& topology,
                 const std::vector<std::string>& sets, const std::string& backend,
                 const std::map<std::string, std::string>& options, bool figures) {
  nlohmann::json doc;
  run_embedded([&] {
    kb::api::ServeRequest r;
    serve_fields(r, axes, hw_axes, presets, topology, sets, backend, options, "serve");
    r.figures = figures;
    doc = kb::api::run_serve(r);
  });
  return to_python(doc);
}

// `sweep serve`, by the typed API: serve's options (lists where the sweep crosses them), and
// its own: slo_percentile, out (the JSON file) and csv. Returns the sweep's document.
py::object sweep_serve(const std::map<std::string, std::string>& axes, const std::map<std::string, std::string>& hw_axes,
                       const std::map<std::string, std::string>& presets, const std::optional<std::string>& topology,
                       const std::vector<std::string>& sets, const std::string& backend,
                       std::map<std::string, std::string> options) {
  nlohmann::json doc;
  run_embedded([&] {
    kb::api::ServeSweepRequest r;
    for (const auto& [name, field] : {std::pair{"slo_percentile", &r.slo_percentile}, {"out", &r.out}, {"csv", &r.csv}})
      if (const auto it = options.find(name); it != options.end()) *field = it->second, options.erase(it);
    serve_fields(r.serve, axes, hw_axes, presets, topology, sets, backend, options, "sweep_serve");
    doc = kb::api::sweep_serve(r);
  });
  return to_python(doc);
}

// A sweep's JSON document, kept whole: Python gets it as objects, and its text (what
// `sweep --json` prints, byte for byte) only when asked for.
struct Document {
  std::shared_ptr<const nlohmann::json> value;
  std::string text() const { return value->dump(2) + "\n"; }
};

// The Python reporter of a sweep (or a merge): progress to the caller's callback between
// chunks (with the GIL, a pending signal raised there: KeyboardInterrupt stops the sweep),
// latencies into a buffer of its own, and the outcome's document kept whole.
class PythonSweepReporter : public kb::api::SweepReporter {
 public:
  PythonSweepReporter(const py::object& progress, bool latencies, std::int64_t max_latencies)
      : progress_(progress), want_latencies_(latencies), max_latencies_(max_latencies) {}
  bool wants_progress() const override { return true; }  // signals are polled between chunks
  void progress(std::int64_t done, std::int64_t total, std::int64_t, double) override {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!progress_.is_none()) progress_(done, total);
  }
  bool wants_latencies() const override { return want_latencies_; }
  std::int64_t* latencies(std::int64_t configs) override {
    if (configs > max_latencies_)
      throw kb::InputError("latencies: the space has " + std::to_string(configs) + " configs, more than the " +
                           std::to_string(max_latencies_) + " asked for at most");
    values.assign(static_cast<std::size_t>(configs), -1);
    return values.data();
  }
  void finished(const kb::SweepOutcome& o, kb::SweepReportTo to) override {
    to.json = true;
    to.document = [this](nlohmann::json d) { document.value = std::make_shared<const nlohmann::json>(std::move(d)); };
    kb::report_sweep(o, to);
  }
  std::vector<std::int64_t> values;
  Document document;

 private:
  py::object progress_;
  bool want_latencies_;
  std::int64_t max_latencies_;
};

std::optional<std::string> text_of(const py::object& v) {
  if (v.is_none()) return std::nullopt;
  return py::str(v).cast<std::string>();
}

// A sweep by the typed API: the space's axes, hardware axes and presets by name (texts), --hw
// lists, zips, and each option's text (None: not given). Returns (the JSON text `sweep --json`
// prints, every config's latency or None).
py::tuple sweep(const std::string& family, const std::map<std::string, std::string>& axes,
                const std::map<std::string, std::string>& hw_axes, const std::map<std::string, std::string>& presets,
                const std::vector<std::string>& hw, const std::vector<std::string>& zips, const py::dict& options,
                const std::optional<std::string>& topology, const std::vector<std::string>& sets,
                const py::object& progress, bool latencies, std::int64_t max_latencies) {
  kb::api::SweepRequest r;
  r.axes = axes, r.hw_axes = hw_axes, r.presets = presets, r.hw = hw, r.zips = zips;
  r.topology = topology_request(topology, sets);
  r.json = true;
  auto option = [&](const char* key) { return options.contains(key) ? text_of(options[key]) : std::nullopt; };
  r.group = option("group"), r.pareto = option("pareto"), r.top = option("top"), r.recheck = option("recheck");
  r.chunk = option("chunk"), r.max_hours = option("max_hours"), r.max_ops = option("max_ops");
  r.backend = option("backend").value_or("auto"), r.shard = option("shard").value_or("");
  r.space = option("space").value_or(""), r.out = option("out").value_or(""), r.csv = option("csv").value_or("");
  if (options.contains("histogram") && !options["histogram"].cast<bool>()) r.no_histogram = r.no_histogram_given = true;
  PythonSweepReporter reporter(progress, latencies, max_latencies);
  run_embedded([&] {
    r.family = &kb::api::family_named(family);
    kb::api::sweep(r, reporter);
  });
  py::object lat = py::none();
  if (latencies) lat = py::cast(Latencies{std::move(reporter.values)});  // moved, not copied
  return py::make_tuple(to_python(*reporter.document.value), reporter.document, lat);
}

// The shards' files merged by the typed API: (`merge --json`'s document as Python objects,
// the document).
py::tuple merge(const std::vector<std::string>& files, const std::string& out_path, const std::string& csv) {
  kb::api::MergeRequest r;
  r.files = files, r.out = out_path, r.csv = csv, r.json = true;
  PythonSweepReporter reporter(py::none(), false, 0);
  run_embedded([&] { kb::api::merge(r, reporter); });
  return py::make_tuple(to_python(*reporter.document.value), reporter.document);
}

// A bench by the typed API; returns the folder it wrote.
std::string run_bench(const std::string& bench, const std::optional<std::string>& topology, const std::vector<std::string>& sets,
                      const std::string& out_dir, const std::string& backend, bool fast) {
  kb::api::BenchRequest r;
  r.bench = bench;
  r.topology = topology_request(topology, sets);
  r.out = out_dir, r.backend = backend, r.fast = fast;
  std::string folder;
  run_embedded([&] { folder = kb::api::run_bench(r); });
  return folder;
}

// `list --json`'s document as Python objects.
py::object list_document() {
  nlohmann::json doc;
  run_embedded([&] { doc = kb::api::list_document(); });
  return to_python(doc);
}

// `topo show FILE --json`'s document as Python objects.
py::object topology_document(const std::string& path, const std::vector<std::string>& sets) {
  nlohmann::json doc;
  run_embedded([&] { doc = kb::api::topology_document(topology_request(path, sets)); });
  return to_python(doc);
}

// What `topo show FILE` prints.
std::string topology_text(const std::string& path, const std::vector<std::string>& sets) {
  std::string text;
  run_embedded([&] { text = kb::api::topology_text(topology_request(path, sets)); });
  return text;
}

// `topo diagram FILE -o OUT`.
void topology_diagram(const std::string& path, const std::vector<std::string>& sets, const std::string& out) {
  run_embedded([&] { kb::api::topology_diagram(topology_request(path, sets), out); });
}

// The family's name for a name or alias (InputError as `eval NAME` words an unknown one).
std::string family_name(const std::string& name) {
  std::string found;
  run_embedded([&] { found = kb::api::family_named(name).name; });
  return found;
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
  kb::set_embedded(true);  // Python handles its own signals; no figure script outlives a call
  py::class_<Latencies>(m, "Latencies", py::buffer_protocol()).def_buffer([](Latencies& l) {
    return py::buffer_info(l.values.data(), sizeof(std::int64_t), py::format_descriptor<std::int64_t>::format(), 1,
                           {static_cast<py::ssize_t>(l.values.size())}, {static_cast<py::ssize_t>(sizeof(std::int64_t))});
  });
  py::class_<Document>(m, "Document").def("text", &Document::text, "the JSON text, as the command line prints it");
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
  m.def("eval", &eval, py::arg("family"), py::arg("axes"), py::arg("hw_axes"), py::arg("presets"), py::arg("topology"),
        py::arg("sets"), py::arg("engine"), py::arg("backend"), py::arg("trace"), py::arg("data"), py::arg("seed"),
        py::arg("max_ops"), "one config by the typed API: `eval --json`'s document as Python objects");
  m.def("sweep", &sweep, py::arg("family"), py::arg("axes"), py::arg("hw_axes"), py::arg("presets"), py::arg("hw"),
        py::arg("zips"), py::arg("options"), py::arg("topology"), py::arg("sets"), py::arg("progress"),
        py::arg("latencies"), py::arg("max_latencies"),
        "a sweep by the typed API: (`sweep --json`'s document as Python objects, the Document, latencies or None)");
  m.def("merge", &merge, py::arg("files"), py::arg("out"), py::arg("csv"),
        "the shards merged by the typed API: (`merge --json`'s document as Python objects, the Document)");
  m.def("run_bench", &run_bench, py::arg("bench"), py::arg("topology"), py::arg("sets"), py::arg("out"),
        py::arg("backend"), py::arg("fast"), "a bench by the typed API: the folder it wrote");
  m.def("serve", &serve, py::arg("axes"), py::arg("hw_axes"), py::arg("presets"), py::arg("topology"), py::arg("sets"),
        py::arg("backend"), py::arg("options"), py::arg("figures"),
        "a serving run of the llm family's model and mapping: `serve --json`'s summary document");
  m.def("sweep_serve", &sweep_serve, py::arg("axes"), py::arg("hw_axes"), py::arg("presets"), py::arg("topology"), py::arg("sets"),
        py::arg("backend"), py::arg("options"),
        "serving runs over lists of arrivals, limits, disaggregation and mappings: `sweep serve --json`'s document");
  m.def("list_document", &list_document, "`list --json`'s document by the typed API");
  m.def("topology_document", &topology_document, py::arg("path"), py::arg("sets"),
        "`topo show FILE --json`'s document by the typed API");
  m.def("topology_text", &topology_text, py::arg("path"), py::arg("sets"), "what `topo show FILE` prints");
  m.def("topology_diagram", &topology_diagram, py::arg("path"), py::arg("sets"), py::arg("out"),
        "`topo diagram FILE -o OUT` by the typed API");
  m.def("family_name", &family_name, py::arg("name"), "the family a name or alias names");
}
