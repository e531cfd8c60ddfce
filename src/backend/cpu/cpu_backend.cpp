// The cpu backend: load() places every buffer (arena for Intermediates, an aligned copy of the
// weights for Constants, backend-owned storage for Inputs and Outputs) and builds one prepared
// step per call, trying in order: a oneDNN primitive (cpu_dnnl.cpp), an own loop
// (cpu_glue.cpp), the reference kernel as the fallback for rare ops and operand combinations
// (any dtype, Linear or NHWC buffers: a plan the compiler made for cpu is never refused);
// post-ops the chosen step does not fuse run as a generic element-wise step after it, and when
// that step cannot take them the reference kernel runs the whole call. Which path each call
// takes is recorded (cpu_call_paths, printed by `opvision inspect`). run() copies the inputs in, runs the steps
// in plan order and copies the outputs out; it allocates nothing.
#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <chrono>
#include <limits>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_strided.h"
#include "core/error.h"

namespace opv::backend {
namespace cpu {

std::string CallCtx::where() const {
  return detail::concat("call '", call.label, "' (", op_name(kernel.op), ")");
}

std::vector<int64_t> logical_strides(const Shape& shape, plan::Layout layout) {
  if (layout == plan::Layout::NHWC) {
    OPV_CHECK(shape.size() == 4, "nhwc layout needs a 4-D shape, got ", shape_str(shape));
    const int64_t C = shape[1], H = shape[2], W = shape[3];
    return {H * W * C, 1, W * C, C};
  }
  OPV_CHECK(layout == plan::Layout::Linear, "cpu backend: unsupported buffer layout ", plan::layout_name(layout));
  return row_major_strides(shape);
}

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t, FreeDeleter>;

AlignedBytes alloc_aligned(int64_t bytes) {
  size_t n = size_t(plan::align_up(std::max<int64_t>(bytes, 1)));
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(size_t(plan::kAlign), n));
  OPV_CHECK(p, "cpu backend: out of memory allocating ", n, " bytes");
  std::memset(p, 0, n);
  return AlignedBytes(p);
}

// Sets the OpenMP thread count for the scope (oneDNN reads it when creating and running
// primitives) and restores the caller's value after.
class ThreadScope {
 public:
  explicit ThreadScope(int n) : prev_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadScope() { omp_set_num_threads(prev_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int prev_;
};

// Copies a buffer stored in `layout` into a row-major destination (used for NHWC outputs).
void copy_to_linear(const BufView& b, void* dst, int threads) {
  std::vector<int64_t> es(2, int64_t(dtype_size(b.dtype)));
  LoopNest n = make_nest(b.shape, {row_major_strides(b.shape), logical_strides(b.shape, b.layout)}, es, threads);
  const size_t esz = dtype_size(b.dtype);
  run_nest(n, {static_cast<char*>(dst), static_cast<char*>(b.ptr)}, [&](int64_t cnt, char** p, const int64_t* st) {
    for (int64_t i = 0; i < cnt; ++i) std::memcpy(p[0] + i * st[0] * esz, p[1] + i * st[1] * esz, esz);
  });
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const Options& o)
      : threads_(o.threads > 0 ? o.threads : omp_get_num_procs()),
        bf16_(o.cpu_bf16),
        eng_(dnnl::engine::kind::cpu, 0),
        strm_(eng_) {}

  std::string name() const override { return "cpu"; }
  // bf16 inputs/weights with fp32 accumulation get DESIGN.md's reduced-precision bound (that of
  // fp16 storage with fp32 accumulation); the fp16 fixture measures rel_l2 7.5e-4 (BENCHMARKS.md).
  Tolerance tolerance() const override { return bf16_ ? Tolerance{1e-2, 1e-2} : Tolerance{1e-4, 1e-4}; }
  Caps caps() const override {
    return {{plan::Layout::Linear, plan::Layout::NHWC}, /*per_call_times=*/true, "host"};
  }
  // Inputs are copied in row-major: an NHWC input only where its channels are trivial.
  Support supports_buffer(const plan::Plan& p, int buffer) const override {
    if (Support s = Backend::supports_buffer(p, buffer); !s) return s;
    const plan::Buffer& b = p.buffers[size_t(buffer)];
    if (b.kind == plan::BufferKind::Input && b.layout != plan::Layout::Linear && !plan::channels_trivial(b.shape))
      return Support::no(detail::concat("input buffer '", b.name, "' must have linear layout"));
    return Support::yes();
  }

  void load(const plan::Plan& p) override {
    require_support(*this, p);  // target, ids, layouts (calls: every op, reference as fallback)
    ThreadScope ts(threads_);
    steps_.clear();
    step_call_.clear();
    labels_.clear();
    paths_.clear();
    owned_.clear();
    views_.assign(p.buffers.size(), BufView{});
    in_ids_ = p.inputs;
    out_ids_ = p.outputs;
    sig_ = RunSignature::of(p);

    arena_ = alloc_aligned(p.arena_bytes);
    weights_ = alloc_aligned(int64_t(p.weights.size()));
    if (!p.weights.empty()) std::memcpy(weights_.get(), p.weights.data(), p.weights.size());

    for (size_t i = 0; i < p.buffers.size(); ++i) {
      const plan::Buffer& b = p.buffers[i];
      BufView& v = views_[i];
      v.id = int(i);
      v.dtype = b.dtype;
      v.shape = b.shape;
      v.layout = b.layout;
      v.kind = b.kind;
      v.bytes = b.bytes;
      const int64_t need = numel(b.shape) * int64_t(dtype_size(b.dtype));
      OPV_CHECK(b.bytes >= need, "cpu backend: buffer '", b.name, "' holds ", b.bytes, " bytes, needs ", need);
      switch (b.kind) {
        case plan::BufferKind::Constant:
          OPV_CHECK(b.offset >= 0 && b.offset + b.bytes <= int64_t(p.weights.size()), "cpu backend: constant '",
                    b.name, "' lies outside the weights blob");
          v.ptr = weights_.get() + b.offset;
          break;
        case plan::BufferKind::Intermediate:
          if (b.offset >= 0) {
            OPV_CHECK(b.offset + b.bytes <= p.arena_bytes, "cpu backend: buffer '", b.name, "' at arena offset ",
                      b.offset, "+", b.bytes, " lies outside the arena of ", p.arena_bytes, " bytes");
            v.ptr = arena_.get() + b.offset;
            break;
          }
          [[fallthrough]];  // not memory-planned: give it its own storage
        case plan::BufferKind::Input:
        case plan::BufferKind::Output:
          owned_.push_back(alloc_aligned(b.bytes));
          v.ptr = owned_.back().get();
          break;
      }
    }
    auto bf16_scratch = bf16_ ? std::make_shared<CallCtx::Bf16Scratch>() : nullptr;
    const FuseInfo fuse(p);
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      const plan::Call& call = p.calls[ci];
      // A group of consecutive calls that one fused step runs (cpu_fused.cpp).
      if (FusedStep fs = build_fused_step(fuse, views_, ci, threads_); fs.calls > 0) {
        for (size_t k = 0; k < fs.calls; ++k) {
          const plan::Call& fc = p.calls[ci + k];
          CallPath path;
          path.label = fc.label;
          path.op = op_name(p.kernels[size_t(fc.kernel)].op);
          path.kernel = p.kernels[size_t(fc.kernel)].name;
          path.impl = CallImpl::Own;
          path.why = detail::concat("fused with c", ci, "..c", ci + fs.calls - 1, ": ", fs.what);
          paths_.push_back(std::move(path));
        }
        steps_.push_back(std::move(fs.fn));
        step_call_.push_back(ci);
        labels_.push_back(call.label);
        ci += fs.calls - 1;
        continue;
      }
      CallCtx c{p, call, p.kernels[size_t(call.kernel)], {}, {}, eng_, strm_, threads_, bf16_scratch, false};
      for (int id : call.inputs) {
        if (id < 0) {
          c.ins.push_back(BufView{});
          continue;
        }
        OPV_CHECK(size_t(id) < views_.size(), "cpu backend: call '", call.label, "' reads buffer ", id, " of ", views_.size());
        c.ins.push_back(views_[size_t(id)]);
      }
      for (int id : call.outputs) {
        OPV_CHECK(id >= 0 && size_t(id) < views_.size(), "cpu backend: call '", call.label, "' writes buffer ", id);
        c.outs.push_back(views_[size_t(id)]);
      }
      CallPath path;
      path.label = call.label;
      path.op = op_name(c.kernel.op);
      path.kernel = c.kernel.name;
      StepFn main;
      size_t done = 0;
      std::string why;  // why the native steps declined, reported with a reference fallback
      try {
        main = build_dnnl_step(c, done);
        if (main) path.impl = CallImpl::OneDnn;
      } catch (const dnnl::error& e) {
        why = detail::concat("oneDNN: ", e.what());
      } catch (const Error& e) {
        why = detail::concat("oneDNN: ", e.what());
      }
      if (!main) {
        done = 0;
        try {
          main = build_glue_step(c);
          if (main) path.impl = CallImpl::Own;
        } catch (const Error& e) {
          why += detail::concat(why.empty() ? "" : "; ", "own loops: ", e.what());
        }
      }
      StepFn post;
      if (main && done < c.kernel.post_ops.size()) {
        try {
          post = build_post_op_step(c, done);
        } catch (const Error& e) {
          why += detail::concat(why.empty() ? "" : "; ", "post-ops: ", e.what());
        }
        if (!post) main = nullptr;  // the reference kernel runs the op with all its post-ops
      }
      if (!main) {
        // The reference kernel runs every op the compiler emits, on any buffer layout of a cpu
        // plan; it is the fallback for what the native steps do not cover, never a refusal.
        main = build_ref_step(c);
        OPV_CHECK(main, "cpu backend: ", c.where(), ": no step runs it");
        done = c.kernel.post_ops.size();
        path.impl = CallImpl::Reference;
        path.why = why.empty() ? "no native step for these dtypes/layouts/operands" : why;
      }
      if (c.used_bf16 && path.impl == CallImpl::OneDnn) path.why = "bf16 input and weights, fp32 accumulation";
      if (post)
        steps_.push_back([main = std::move(main), post = std::move(post)] {
          main();
          post();
        });
      else
        steps_.push_back(std::move(main));
      paths_.push_back(std::move(path));
      labels_.push_back(call.label);
      step_call_.push_back(ci);
    }
    if (bf16_scratch && bf16_scratch->bytes > 0) {
      // Owned by the steps that use it (through CallCtx::bf16), freed with them.
      bf16_scratch->ptr = std::shared_ptr<void>(alloc_aligned(int64_t(bf16_scratch->bytes)).release(), FreeDeleter{});
    }
    times_.assign(p.calls.size(), 0.0);
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) override {
    sig_.check(inputs, outputs);  // Session checked them; this asserts the precondition
    ThreadScope ts(threads_);
    for (size_t i = 0; i < inputs.size(); ++i)
      std::memcpy(views_[size_t(in_ids_[i])].ptr, inputs[i]->raw(), inputs[i]->nbytes());
    const auto run_t0 = std::chrono::steady_clock::now();
    if (profiling_) starts_.assign(times_.size(), std::numeric_limits<double>::quiet_NaN());
    try {
      for (size_t s = 0; s < steps_.size(); ++s) {
        if (profiling_) {
          auto t0 = std::chrono::steady_clock::now();
          steps_[s]();
          strm_.wait();
          // A fused step's time goes to its first call (its other calls show 0 and no start).
          times_[step_call_[s]] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          starts_[step_call_[s]] = std::chrono::duration<double, std::milli>(t0 - run_t0).count();
        } else {
          steps_[s]();
        }
      }
      strm_.wait();
    } catch (const dnnl::error& e) {
      fail("cpu backend: oneDNN failed during run: ", e.what(), " (status ", int(e.status), ")");
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const BufView& v = views_[size_t(out_ids_[i])];
      if (v.layout == plan::Layout::Linear || plan::channels_trivial(v.shape))
        std::memcpy(outputs[i]->raw(), v.ptr, outputs[i]->nbytes());
      else
        copy_to_linear(v, outputs[i]->raw(), threads_);
    }
  }

  void set_profiling(bool on) override { profiling_ = on; }
  std::vector<double> call_times_ms() const override { return profiling_ ? times_ : std::vector<double>{}; }
  std::vector<double> call_starts_ms() const override { return profiling_ ? starts_ : std::vector<double>{}; }
  const std::vector<CallPath>& call_paths() const { return paths_; }

 private:
  int threads_;
  bool bf16_;
  dnnl::engine eng_;
  dnnl::stream strm_;
  AlignedBytes arena_, weights_;
  std::vector<AlignedBytes> owned_;
  std::vector<BufView> views_;
  std::vector<int> in_ids_, out_ids_;
  RunSignature sig_;
  std::vector<StepFn> steps_;
  std::vector<size_t> step_call_;  // per step: its (first) plan call
  std::vector<std::string> labels_;
  std::vector<CallPath> paths_;
  std::vector<double> times_;
  std::vector<double> starts_;  // per call, ms from the run's start (profiling)
  bool profiling_ = false;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(const Options& opts) { return std::make_unique<cpu::CpuBackend>(opts); }

const char* call_impl_name(CallImpl i) {
  switch (i) {
    case CallImpl::OneDnn: return "native-onednn";
    case CallImpl::Own: return "native-loop";
    case CallImpl::Reference: return "reference";
  }
  return "?";
}

std::vector<CallPath> cpu_call_paths(const plan::Plan& p, const Options& base) {
  Options o = base;
  o.threads = 1;
  cpu::CpuBackend b(o);
  b.load(p);
  return b.call_paths();
}

}  // namespace opv::backend
