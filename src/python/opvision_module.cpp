// opvision._opvision: the Python binding (nanobind) behind the `opvision` package (python/opvision).
// It is a thin layer over the C++ API the CLI uses:
//   1. compile(): the compiler driver (compile_onnx) and the artifact writer (save_artifact), as
//      `opvision compile` does;
//   2. _Session: a runtime::Session over a .opv artifact or an .onnx compiled in memory for the
//      backend's target (tools::load_model, as `opvision run` does); run() and run_into() bind the
//      caller's numpy arrays as Tensor views, so inputs are read and outputs written in place;
//   3. profile(): profiled runs as a Chrome/Perfetto trace (tools/trace.h, as `opvision bench --trace`);
//   4. errors: opv::Error from each phase becomes one of the opvision.errors classes (loading an
//      artifact: LoadError, compiling: InvalidGraph, a caller's tensor: InvalidArgument, the
//      backend: BackendError); the binding's own argument checks (array type, dtype, contiguity,
//      alignment) raise InvalidArgument naming the input or output.
// Invariant: the GIL is released while a model compiles, loads or runs; a session's runs are
// serialised by its own mutex, so sharing one session between threads is safe (and two
// sessions run in parallel).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "compiler/compile.h"
#include "core/error.h"
#include "ir/passes/passes.h"
#include "plan/artifact.h"
#include "plan/passes/passes.h"
#include "runtime/session.h"
#include "tools/common.h"
#include "tools/trace.h"

namespace nb = nanobind;

namespace opv::python {
namespace {

// ---- errors: the opvision.errors classes, by kind -------------------------------------------
enum class ErrorKind { Error, InvalidArgument, InvalidGraph, LoadError, BackendError, Count };
constexpr std::array<const char*, size_t(ErrorKind::Count)> kErrorClassNames = {
    "Error", "InvalidArgument", "InvalidGraph", "LoadError", "BackendError"};
constexpr const char* kErrorsModule = "opvision.errors";

// What the binding throws; translated into the Python class of its kind.
struct PythonError {
  ErrorKind kind;
  std::string message;
};

// Classes imported once at module init and kept for the process's life.
std::array<PyObject*, size_t(ErrorKind::Count)> g_error_classes{};

template <typename... Args>
[[noreturn]] void raise(ErrorKind kind, const Args&... args) {
  throw PythonError{kind, detail::concat(args...)};
}

// Runs f(); opv::InvalidArgument becomes InvalidArgument, any other opv::Error the phase's kind.
template <typename F>
decltype(auto) in_phase(ErrorKind kind, F&& f) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    throw PythonError{ErrorKind::InvalidArgument, e.what()};
  } catch (const Error& e) {
    throw PythonError{kind, e.what()};
  }
}

void translate_exception(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const PythonError& e) {
    PyErr_SetString(g_error_classes[size_t(e.kind)], e.message.c_str());
  } catch (const Error& e) {  // an opv::Error outside any phase: still an opvision.Error
    PyErr_SetString(g_error_classes[size_t(ErrorKind::Error)], e.what());
  }
}

// ---- numpy arrays <-> tensors -----------------------------------------------------------------
// The DLPack dtype of each opv::DType (numpy: float32, float16, float64, int64, int32, int8,
// uint8, bool).
struct DTypeMap {
  DType dtype;
  nb::dlpack::dtype_code code;
  uint8_t bits;
  const char* numpy;  // numpy's name, to allocate outputs
};
constexpr std::array<DTypeMap, 8> kDTypes = {{
    {DType::F32, nb::dlpack::dtype_code::Float, 32, "float32"},
    {DType::F16, nb::dlpack::dtype_code::Float, 16, "float16"},
    {DType::F64, nb::dlpack::dtype_code::Float, 64, "float64"},
    {DType::I64, nb::dlpack::dtype_code::Int, 64, "int64"},
    {DType::I32, nb::dlpack::dtype_code::Int, 32, "int32"},
    {DType::I8, nb::dlpack::dtype_code::Int, 8, "int8"},
    {DType::U8, nb::dlpack::dtype_code::UInt, 8, "uint8"},
    {DType::Bool, nb::dlpack::dtype_code::Bool, 8, "bool"},
}};

const DTypeMap& dtype_entry(DType t) {
  for (const DTypeMap& m : kDTypes)
    if (m.dtype == t) return m;
  raise(ErrorKind::Error, "internal error: dtype ", dtype_name(t), " has no numpy equivalent");
}

std::string describe_dlpack(nb::dlpack::dtype d) {
  for (const DTypeMap& m : kDTypes)
    if (uint8_t(m.code) == d.code && m.bits == d.bits && d.lanes == 1) return m.numpy;
  return detail::concat("dlpack(code ", int(d.code), ", bits ", int(d.bits), ", lanes ", int(d.lanes), ")");
}

std::string key_name(nb::handle key, const char* role) {
  if (!nb::isinstance<nb::str>(key))
    raise(ErrorKind::InvalidArgument, role, " names must be str, got ", nb::inst_name(key).c_str());
  return nb::cast<std::string>(key);
}

// A view of `arr` (the caller's memory, read or written in place) after the checks a Tensor
// cannot make itself: host memory, a known dtype, C-contiguous, element-aligned. Dtype and shape
// against the model are left to runtime::Session (check_bound, the one input check).
template <typename Array>
Tensor view_of(const Array& arr, const std::string& name, const char* role) {
  if (arr.device_type() != nb::device::cpu::value)
    raise(ErrorKind::InvalidArgument, role, " '", name, "' is not in host memory (device type ", arr.device_type(),
          "); copy it to a numpy array");
  const nb::dlpack::dtype d = arr.dtype();
  const DTypeMap* m = nullptr;
  for (const DTypeMap& e : kDTypes)
    if (uint8_t(e.code) == d.code && e.bits == d.bits && d.lanes == 1) m = &e;
  if (m == nullptr)
    raise(ErrorKind::InvalidArgument, role, " '", name, "' has dtype ", describe_dlpack(d),
          ", which opvision does not support");
  Shape shape(arr.ndim());
  int64_t expected_stride = 1;
  bool contiguous = true;
  for (size_t i = arr.ndim(); i-- > 0;) {
    shape[i] = int64_t(arr.shape(i));
    if (shape[i] != 1 && arr.stride(i) != expected_stride) contiguous = false;
    expected_stride *= shape[i];
  }
  if (!contiguous && expected_stride != 0)
    raise(ErrorKind::InvalidArgument, role, " '", name, "' (", m->numpy, shape_str(shape),
          ") is not C-contiguous: pass numpy.ascontiguousarray(...) of it");
  if (reinterpret_cast<uintptr_t>(arr.data()) % (m->bits / 8) != 0)
    raise(ErrorKind::InvalidArgument, role, " '", name, "' is not aligned to its ", m->bits / 8,
          "-byte elements: pass a copy of it");
  return Tensor::view(m->dtype, std::move(shape), const_cast<void*>(static_cast<const void*>(arr.data())));
}

// The feed dict {name: array} as tensor views; `keep` holds the arrays while the GIL is released.
runtime::NamedTensors input_views(nb::handle feed, std::vector<nb::ndarray<nb::ro>>& keep) {
  if (!nb::isinstance<nb::dict>(feed))
    raise(ErrorKind::InvalidArgument, "the input feed must be a dict {name: numpy array}, got ",
          nb::inst_name(feed).c_str());
  runtime::NamedTensors views;
  for (auto [key, value] : nb::borrow<nb::dict>(feed)) {
    std::string name = key_name(key, "input");
    nb::ndarray<nb::ro> arr;
    if (!nb::try_cast(value, arr, false))
      raise(ErrorKind::InvalidArgument, "input '", name, "' must be a numpy array, got ", nb::inst_name(value).c_str());
    views.emplace_back(name, view_of(arr, name, "input"));
    keep.push_back(std::move(arr));
  }
  return views;
}

nb::object numpy_empty(const plan::Buffer& spec) {
  static nb::object empty = nb::module_::import_("numpy").attr("empty");
  nb::list shape;
  for (int64_t d : spec.shape) shape.append(d);
  return empty(nb::tuple(shape), dtype_entry(spec.dtype).numpy);
}

nb::tuple describe_spec(const std::string& name, const plan::Buffer& b) {
  nb::list shape;
  for (int64_t d : b.shape) shape.append(d);
  return nb::make_tuple(name, dtype_entry(b.dtype).numpy, nb::tuple(shape));
}

// ---- compile ------------------------------------------------------------------------------------
// The kind of an ONNX model's import/compile failure: LoadError when there is no file to read
// (the importer's message says why), else InvalidGraph.
ErrorKind model_error_kind(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? ErrorKind::InvalidGraph : ErrorKind::LoadError;
}

bool listed(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

void check_target(const std::string& target, const char* what) {
  std::vector<std::string> known = backend::available();
  if (listed(known, target)) return;
  std::string list;
  for (const std::string& b : known) list += (list.empty() ? "" : ", ") + b;
  raise(ErrorKind::InvalidArgument, "unknown ", what, " '", target, "' (available: ", list, ")");
}

// CompileOptions for `passes` (None: the target's defaults; a list: only those plan passes, plus
// the mandatory ones; an empty list: none but the mandatory ones) and `disable` (graph or plan
// passes to skip), and `batch` (None: the model's own batch; N: compile --batch N, 1..kMaxCompileBatch).
// Names and the batch are checked here so that a wrong one is the caller's InvalidArgument; the
// compiler checks them again.
CompileOptions compile_options(const std::string& target, const std::optional<std::vector<std::string>>& passes,
                               const std::vector<std::string>& disable, const std::optional<int64_t>& batch) {
  check_target(target, "target");
  if (batch && (*batch < 1 || *batch > kMaxCompileBatch))
    raise(ErrorKind::InvalidArgument, "batch must be in 1..", kMaxCompileBatch, " (None: the model's own batch), got ",
          *batch);
  std::vector<std::string> plan_names, graph_names;
  for (const plan::PlanPassInfo& p : plan::plan_passes_for(target)) plan_names.push_back(p.name);
  for (const auto& p : ir::graph_passes()) graph_names.push_back(p.name);
  CompileOptions opts;
  opts.target = target;
  opts.batch = batch.value_or(0);
  if (passes) {
    for (const std::string& n : *passes)
      if (!listed(plan_names, n))
        raise(ErrorKind::InvalidArgument, "unknown plan pass '", n, "' for target ", target, " (plan passes: ",
              plan::plan_pass_list(target), ")");
    opts.only_passes = *passes;
    if (passes->empty())
      for (const std::string& n : plan_names)
        if (!plan_pass_mandatory(target, n)) opts.disable_passes.push_back(n);
  }
  for (const std::string& n : disable) {
    if (!listed(plan_names, n) && !listed(graph_names, n))
      raise(ErrorKind::InvalidArgument, "unknown pass '", n, "' for target ", target, " to disable");
    if (plan_pass_mandatory(target, n))
      raise(ErrorKind::InvalidArgument, "pass '", n, "' always runs for target ", target, " and cannot be disabled");
    if (!listed(opts.disable_passes, n)) opts.disable_passes.push_back(n);
  }
  return opts;
}

void compile(const std::string& onnx_path, const std::string& out_path, const std::string& target,
             const std::optional<std::vector<std::string>>& passes, const std::vector<std::string>& disable,
             const std::optional<int64_t>& batch) {
  CompileOptions opts = compile_options(target, passes, disable, batch);
  nb::gil_scoped_release unlocked;
  plan::Plan plan = in_phase(model_error_kind(onnx_path), [&] { return compile_onnx(onnx_path, opts); });
  in_phase(ErrorKind::Error, [&] { plan::save_artifact(plan, out_path); });
}

// ---- the session ---------------------------------------------------------------------------------
class PySession {
 public:
  PySession(const std::string& path, const std::string& backend_name, int64_t threads, const std::string& device,
            const std::string& cpu_precision, const std::string& cuda_inputs, const std::string& cuda_code) {
    check_target(backend_name, "backend");
    if (cpu_precision != "fp32" && cpu_precision != "bf16")
      raise(ErrorKind::InvalidArgument, "cpu_precision must be 'fp32' or 'bf16', got '", cpu_precision, "'");
    static const std::pair<const char*, backend::CudaIo> kCudaIo[] = {{"auto", backend::CudaIo::Auto},
                                                                       {"copy", backend::CudaIo::Copy},
                                                                       {"mapped", backend::CudaIo::Mapped},
                                                                       {"device", backend::CudaIo::Device}};
    const auto io = std::find_if(std::begin(kCudaIo), std::end(kCudaIo),
                                 [&](const auto& e) { return cuda_inputs == e.first; });
    if (io == std::end(kCudaIo))
      raise(ErrorKind::InvalidArgument, "cuda_inputs must be 'auto', 'copy', 'mapped' or 'device', got '", cuda_inputs,
            "'");
    if (cuda_code != "auto" && cuda_code != "ptx")
      raise(ErrorKind::InvalidArgument, "cuda_code must be 'auto' or 'ptx', got '", cuda_code, "'");
    if (threads < 0 || threads > tools::kMaxThreads)
      raise(ErrorKind::InvalidArgument, "threads must be in 0..", tools::kMaxThreads, " (0: the backend's default), got ",
            threads);
    backend::Options opts;
    opts.threads = int(threads);
    opts.device = device;
    opts.cpu_bf16 = cpu_precision == "bf16";
    opts.cuda_inputs = io->second;
    opts.cuda_sass = cuda_code == "auto";
    path_ = path;
    threads_ = int(threads);
    nb::gil_scoped_release unlocked;
    const bool artifact = in_phase(ErrorKind::LoadError, [&] { return tools::is_artifact_path(path); });
    plan::Plan plan = in_phase(artifact ? ErrorKind::LoadError : model_error_kind(path),
                               [&] { return tools::load_model(path, backend_name); });
    session_ = in_phase(ErrorKind::BackendError,
                        [&] { return std::make_unique<runtime::Session>(std::move(plan), opts); });
  }

  std::string backend_name() const { return session_->plan().target; }

  // Samples per inference of a compile --batch N artifact (plan meta "batch", as `inspect` shows
  // it); nullopt when the model keeps its own batch.
  std::optional<int64_t> batch() const {
    const Attrs& meta = session_->plan().meta;
    if (!meta.has(kBatchMetaKey)) return std::nullopt;
    return meta.i(kBatchMetaKey);
  }

  nb::list inputs() const {
    nb::list r;
    for (const auto& [name, b] : session_->input_specs()) r.append(describe_spec(name, *b));
    return r;
  }
  nb::list outputs() const {
    nb::list r;
    for (const auto& [name, b] : session_->output_specs()) r.append(describe_spec(name, *b));
    return r;
  }

  // New arrays for the named outputs (None: all, in model order), written by the run in place.
  // feed None: a run on the inputs kept in device memory (runtime::Session::run_device_inputs).
  nb::list run(nb::handle feed, const std::optional<std::vector<std::string>>& names) {
    std::vector<std::string> wanted;
    if (names) {
      wanted = *names;
    } else {
      for (const auto& [name, b] : session_->output_specs()) wanted.push_back(name);
    }
    std::vector<nb::ndarray<nb::ro>> keep_in;
    const bool on_device = feed.is_none();
    runtime::NamedTensors ins = on_device ? runtime::NamedTensors{} : input_views(feed, keep_in);
    std::vector<std::string> unique;
    std::vector<nb::object> arrays;
    std::vector<Tensor> views;
    views.reserve(wanted.size());  // stable addresses for the NamedOutputs below
    runtime::NamedOutputs outs;
    for (const std::string& name : wanted) {
      if (listed(unique, name)) continue;
      const plan::Buffer& spec = in_phase(ErrorKind::Error, [&]() -> const plan::Buffer& {
        return session_->output_spec(name);
      });
      nb::object a = numpy_empty(spec);
      nb::ndarray<> arr = nb::cast<nb::ndarray<>>(a);
      views.push_back(Tensor::view(spec.dtype, spec.shape, arr.data()));
      outs.emplace_back(name, &views.back());
      unique.push_back(name);
      arrays.push_back(std::move(a));
    }
    run_locked(ins, outs, on_device);
    nb::list r;
    for (const std::string& name : wanted)
      r.append(arrays[size_t(std::find(unique.begin(), unique.end(), name) - unique.begin())]);
    return r;
  }

  // Writes into the caller's arrays: `outputs` is a dict {name: array} (any subset of the
  // outputs) or a list/tuple of arrays for all outputs in model order.
  void run_into(nb::handle feed, nb::handle outputs) {
    std::vector<nb::ndarray<nb::ro>> keep_in;
    runtime::NamedTensors ins = input_views(feed, keep_in);
    std::vector<std::pair<std::string, nb::handle>> named;
    if (nb::isinstance<nb::dict>(outputs)) {
      for (auto [key, value] : nb::borrow<nb::dict>(outputs)) named.emplace_back(key_name(key, "output"), value);
    } else if (nb::isinstance<nb::list>(outputs) || nb::isinstance<nb::tuple>(outputs)) {
      auto specs = session_->output_specs();
      nb::sequence seq = nb::borrow<nb::sequence>(outputs);
      if (nb::len(seq) != specs.size())
        raise(ErrorKind::InvalidArgument, "run_into: ", nb::len(seq), " output arrays given, the model has ",
              specs.size(), " outputs (pass a dict {name: array} for a subset)");
      for (size_t i = 0; i < specs.size(); ++i) named.emplace_back(specs[i].first, seq[i]);
    } else {
      raise(ErrorKind::InvalidArgument, "run_into: outputs must be a dict {name: array} or a list of arrays, got ",
            nb::inst_name(outputs).c_str());
    }
    std::vector<nb::ndarray<>> keep_out;
    std::vector<Tensor> views;
    views.reserve(named.size());  // stable addresses for the NamedOutputs below
    runtime::NamedOutputs outs;
    for (const auto& [name, value] : named) {
      nb::ndarray<> arr;
      if (!nb::try_cast(value, arr, false)) {
        nb::ndarray<nb::ro> ro;
        raise(ErrorKind::InvalidArgument, "output '", name, "' must be a ",
              nb::try_cast(value, ro, false) ? "writeable " : "", "numpy array, got ",
              nb::try_cast(value, ro, false) ? "a read-only array" : nb::inst_name(value).c_str());
      }
      views.push_back(view_of(arr, name, "output"));
      outs.emplace_back(name, &views.back());
      keep_out.push_back(std::move(arr));
    }
    run_locked(ins, outs);
  }

  // {input name: writeable array} in model order, viewing the memory the backend reads each input
  // from (runtime::Session::staged_inputs: the cuda backend's pinned staging; else the session's
  // own buffer): a run given these arrays copies nothing on the host. Made once; `self` (this
  // session's Python object) owns the arrays, so they keep the session alive.
  nb::dict staged_inputs(nb::handle self) {
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(mu_);
      if (!staged_) staged_ = in_phase(ErrorKind::BackendError, [&] { return session_->staged_inputs(); });
    }
    nb::dict r;
    for (const auto& [name, t] : *staged_) {
      std::vector<size_t> shape(t.shape().begin(), t.shape().end());
      const DTypeMap& m = dtype_entry(t.dtype());
      nb::ndarray<nb::numpy> arr(const_cast<void*>(static_cast<const void*>(t.raw())), shape.size(), shape.data(), self,
                                 nullptr, nb::dlpack::dtype{uint8_t(m.code), m.bits, 1});
      r[name.c_str()] = nb::cast(arr, nb::rv_policy::reference);
    }
    return r;
  }

  // [(name, device address)] in model order (runtime::Session::device_inputs; 0: not on the device).
  std::vector<std::pair<std::string, uint64_t>> device_inputs() {
    nb::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    return session_->device_inputs();
  }

  // `runs` profiled runs on `feed` as Chrome trace JSON.
  std::string profile(nb::handle feed, int64_t runs) {
    if (runs < 1 || runs > kMaxProfileRuns)
      raise(ErrorKind::InvalidArgument, "runs must be in 1..", kMaxProfileRuns, ", got ", runs);
    std::vector<nb::ndarray<nb::ro>> keep_in;
    runtime::NamedTensors ins = input_views(feed, keep_in);
    nb::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    return in_phase(ErrorKind::BackendError, [&] {
      const plan::Plan& plan = session_->plan();
      std::vector<tools::TraceRun> timelines =
          tools::profile_runs(session_->backend(), plan, runs, [&] { session_->run_into(ins, {}); });
      OPV_CHECK(!timelines.empty(), "profile: backend ", plan.target, " reports no per-call times");
      return tools::chrome_trace(plan, timelines, path_, session_->backend().caps().device, threads_);
    });
  }

 private:
  static constexpr int64_t kMaxProfileRuns = 1000;

  void run_locked(const runtime::NamedTensors& ins, const runtime::NamedOutputs& outs, bool on_device = false) {
    nb::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    in_phase(ErrorKind::BackendError, [&] {
      if (on_device)
        session_->run_device_inputs_into(outs);
      else
        session_->run_into(ins, outs);
    });
  }

  std::unique_ptr<runtime::Session> session_;
  std::optional<runtime::NamedTensors> staged_;  // staged_inputs(), made once, never copied
  std::mutex mu_;
  std::string path_;  // the model, for trace titles
  int threads_ = 0;
};

}  // namespace
}  // namespace opv::python

NB_MODULE(_opvision, m) {
  using namespace opv::python;
  m.doc() = "opvision's C++ binding; use the `opvision` package, which wraps it.";
  nb::module_ errors = nb::module_::import_(kErrorsModule);
  for (size_t i = 0; i < kErrorClassNames.size(); ++i) {
    nb::object cls = errors.attr(kErrorClassNames[i]);
    g_error_classes[i] = cls.release().ptr();  // kept for the process's life
  }
  nb::register_exception_translator(translate_exception);

  m.attr("__version__") = opv::tools::kVersion;
  m.attr("MAX_COMPILE_BATCH") = opv::kMaxCompileBatch;
  m.def("available_backends", &opv::backend::available, "Backend names this build can run.");
  m.def("compile", &compile, nb::arg("onnx_path"), nb::arg("out_path"), nb::arg("target"), nb::arg("passes").none(),
        nb::arg("disable_passes"), nb::arg("batch").none(), "Compiles an ONNX model for `target` and writes the .opv artifact.");
  nb::class_<PySession>(m, "_Session", "A loaded model on one backend (see opvision.InferenceSession).")
      .def(nb::init<const std::string&, const std::string&, int64_t, const std::string&, const std::string&,
                    const std::string&, const std::string&>(),
           nb::arg("path"), nb::arg("backend"), nb::arg("threads"), nb::arg("device"), nb::arg("cpu_precision"),
           nb::arg("cuda_inputs"), nb::arg("cuda_code"))
      .def_prop_ro("backend", &PySession::backend_name)
      .def_prop_ro("batch", &PySession::batch, "samples per inference of a compile --batch artifact, else None")
      .def("inputs", &PySession::inputs, "[(name, numpy dtype name, shape)] in model order")
      .def("outputs", &PySession::outputs, "[(name, numpy dtype name, shape)] in model order")
      .def("run", &PySession::run, nb::arg("feed").none(), nb::arg("names").none())
      .def("device_inputs", &PySession::device_inputs, "[(name, device address)] in model order (0: none)")
      .def("run_into", &PySession::run_into, nb::arg("feed"), nb::arg("outputs"))
      .def("profile", &PySession::profile, nb::arg("feed"), nb::arg("runs"), "Chrome trace JSON of `runs` profiled runs")
      .def("staged_inputs", [](nb::handle self) { return nb::inst_ptr<PySession>(self)->staged_inputs(self); },
           "{name: array} viewing the memory the backend reads each input from");
}
