// `opvision inspect MODEL`: what a model's plan contains and costs (op histogram, kernels,
// buffers by kind, weights/arena/peak bytes, FLOPs and bytes moved; see plan_stats.h), the
// whole plan with --dump, generated kernel sources with --source NAME.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "backend/qcom/capture_stream.h"
#include "backend/qcom/sim_device.h"
#include "compiler/compile.h"
#include "ir3/capture.h"
#include "ir3/passes/passes.h"
#include "plan/passes/passes.h"
#include "target/cuda/codegen.h"
#include "target/cuda/cuda_abi.h"
#include "target/cuda/options.h"
#include "tools/common.h"
#include "tools/plan_stats.h"

namespace opv::tools {

namespace {

std::string human_bytes(int64_t b) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0;
  if (b >= int64_t(kMiB)) return fmt("%lld B (%.2f MiB)", (long long)b, double(b) / kMiB);
  if (b >= int64_t(kKiB)) return fmt("%lld B (%.1f KiB)", (long long)b, double(b) / kKiB);
  return fmt("%lld B", (long long)b);
}

}  // namespace

// A capture directory (tools/ir3_capture.py): its kernels with their static statistics and
// launches, and the qcom command stream per inference with dependency barriers and with a
// barrier after every dispatch (built on the simulated a630; nothing is run).
static int inspect_capture(const std::string& dir) {
  ir3::Capture cap = ir3::Capture::load(dir);
  std::printf("capture %s: gpu %s, model %s, %zu kernels, %zu setup steps, %zu launches per inference\n", dir.c_str(),
              cap.gpu.c_str(), cap.model_file.c_str(), cap.kernels.size(), cap.setup.size(), cap.schedule.size());
  std::printf("%-4s %-44s %8s %6s %14s %8s\n", "#", "kernel", "launches", "instr", "mad.f32 in rpt", "max_reg");
  for (size_t k = 0; k < cap.kernels.size(); ++k) {
    int n = 0;
    for (const ir3::CaptureLaunch& l : cap.schedule) n += l.kernel == int(k);
    ir3::passes::Stats s = ir3::passes::stats(cap.kernels[k].code);
    std::printf("%-4zu %-44.44s %8d %6d %8d/%-5d %8d\n", k, cap.kernels[k].name.c_str(), n, s.instructions, s.mad_f32_packed,
                s.mad_f32, s.max_reg);
  }
  for (qcom::BarrierMode m : {qcom::BarrierMode::Dependencies, qcom::BarrierMode::PerDispatch}) {
    qcom::SimDevice dev(qcom::SimDeviceOptions{});
    qcom::StreamOptions so;
    so.mode = m;
    so.skip_setup = true;
    qcom::CaptureRunner runner(cap, dev, so);
    const qcom::StreamStats& st = runner.stats();
    std::printf("qcom stream per inference (%s): %llu submission, %llu dispatches, %llu packets, %llu barriers, "
                "%llu cache invalidates, %llu cache flushes, %llu bytes\n",
                m == qcom::BarrierMode::Dependencies ? "barriers on dependency edges" : "barrier after every dispatch",
                (unsigned long long)st.submissions, (unsigned long long)st.dispatches, (unsigned long long)st.packets,
                (unsigned long long)st.barriers, (unsigned long long)st.cache_invalidates,
                (unsigned long long)st.cache_flushes, (unsigned long long)st.bytes);
  }
  return kExitOk;
}

int cmd_inspect(int argc, char** argv) {
  ArgParser p("opvision inspect",
              "Summarises a model's plan: op histogram, kernels, buffers (count and bytes by kind), weights, "
              "arena and peak bytes, FLOPs and bytes moved.",
              "MODEL [options]");
  p.positional("MODEL", "an ONNX model (compiled on the fly), a .opv artifact, or an IR3 capture directory "
                        "(kernels, launches and the qcom command stream's barriers)")
      .option("--target", "B", "backend to compile for (.opv: must match the artifact, default its target)",
              kDefaultBackend)
      .flag("--dump", "also print the whole plan")
      .flag("--calls", "cpu plans: list how every call runs (oneDNN, own loop or reference kernel), not only "
            "the reference fallbacks")
      .option("--cpu-precision", "fp32|bf16", "cpu plans: the paths the backend takes at this --cpu-precision "
              "(bf16 marks the convolutions it runs in bf16)", "fp32")
      .option("--source", "NAME", "print the generated source and build options of the GPU kernels whose name "
              "contains NAME, and nothing else (cuda: the CUDA C++ the stored PTX was compiled from)", "");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  const std::string& model = a.positionals[0];
  std::error_code ec;
  if (std::filesystem::is_directory(model, ec)) return inspect_capture(model);
  plan::Plan plan = load_model(model, a.get("--target"));
  if (const std::string want = a.get("--source", ""); !want.empty()) {
    int shown = 0;
    for (size_t ki = 0; ki < plan.kernels.size(); ++ki) {
      const plan::Kernel& k = plan.kernels[ki];
      if (k.name.find(want) == std::string::npos) continue;
      std::string source = k.source;
      // cuda kernels store PTX; their CUDA C++ is generated again from the first call using them.
      if (plan.target == "cuda" && k.options == plan::cuda::kPtxFormat)
        for (const plan::Call& c : plan.calls)
          if (c.kernel == int(ki)) {
            source = plan::cuda::generate(plan, c).source;
            break;
          }
      std::printf("// kernel %s  entry %s  options '%s'\n%s\n", k.name.c_str(), k.entry.c_str(), k.options.c_str(),
                  source.empty() ? "// (no source: runs on the host through the reference kernel)" : source.c_str());
      ++shown;
    }
    if (shown == 0) fail("no kernel of ", model, " has '", want, "' in its name");
    return kExitOk;
  }

  const PlanStats s = plan_stats(plan);
  constexpr double kGiga = 1e9, kMega = 1e6;

  std::printf("model %s  target %s\n", model.c_str(), plan.target.c_str());
  if (!plan.meta.map().empty()) std::printf("meta %s\n", plan.meta.str().c_str());
  std::printf("calls %zu  kernels %zu  buffers %zu\n", plan.calls.size(), plan.kernels.size(), plan.buffers.size());
  {  // samples per inference: compile --batch (meta), else the inputs' leading dimension as imported
    std::string inputs;
    for (const plan::Buffer& b : plan.buffers)
      if (b.kind == plan::BufferKind::Input) inputs += (inputs.empty() ? "" : ", ") + b.name + shape_str(b.shape);
    if (plan.meta.has(kBatchMetaKey))
      std::printf("batch %lld (compile --batch; inputs %s)\n", (long long)plan.meta.i(kBatchMetaKey), inputs.c_str());
    else
      std::printf("batch as the model (inputs %s)\n", inputs.c_str());
  }
  std::printf("\nops (calls per op):\n");
  for (const auto& [name, n] : s.op_calls) std::printf("  %-20s %6lld\n", name.c_str(), (long long)n);
  std::printf("\nkernels (calls per kernel):\n");
  for (const auto& [name, n] : s.kernel_calls) std::printf("  %-48s %6lld\n", name.c_str(), (long long)n);
  if (!s.gpu_kernels.empty()) {
    std::printf("\nGPU kernels (texture reads per work-item; gated = conditional reads):\n");
    std::printf("  %-44s %-10s %8s %6s %10s %6s %6s %12s %8s\n", "kernel", "family", "launches", "calls", "items",
                "reads", "gated", "tex reads", "gated");
    int64_t launches = 0, calls = 0, reads = 0, gated = 0, host = 0;
    for (const auto& [name, g] : s.gpu_kernels) {
      std::printf("  %-44s %-10s %8lld %6lld %10lld %6lld %6lld %12lld %8lld\n", name.c_str(), g.family.c_str(),
                  (long long)g.launches, (long long)g.calls, (long long)g.work_items, (long long)g.reads_per_item,
                  (long long)g.gated_per_item, (long long)g.texture_reads(), (long long)g.gated_reads());
      launches += g.launches;
      calls += g.calls;
      reads += g.texture_reads();
      gated += g.gated_reads();
      if (g.family == "host") host += g.launches;
    }
    std::printf("  total: %lld launches for %lld calls, %lld host-fallback calls, %lld texture reads, %lld gated\n",
                (long long)launches, (long long)calls, (long long)host, (long long)reads, (long long)gated);
  }
  if (plan.target == "cpu") {
    // How the cpu backend runs each call: native (oneDNN primitive or own loop) or through the
    // reference kernel; the fallbacks are listed with the reason, every call with --calls.
    backend::Options bo;
    const std::string prec = a.get("--cpu-precision", "fp32");
    if (prec != "fp32" && prec != "bf16") throw UsageError("--cpu-precision must be fp32 or bf16, not '" + prec + "'");
    bo.cpu_bf16 = prec == "bf16";
    const std::vector<backend::CallPath> paths = backend::cpu_call_paths(plan, bo);
    int64_t n[3] = {0, 0, 0};
    for (const backend::CallPath& c : paths) ++n[size_t(c.impl)];
    int64_t in_bf16 = 0;
    for (const backend::CallPath& c : paths) in_bf16 += c.why.rfind("bf16", 0) == 0;
    std::printf("\ncpu execution: %lld calls native (oneDNN %lld, own loops %lld), %lld via the reference kernel",
                (long long)(n[0] + n[1]), (long long)n[0], (long long)n[1], (long long)n[2]);
    if (bo.cpu_bf16) std::printf("; %lld convolutions in bf16", (long long)in_bf16);
    std::printf("\n");
    const bool all = a.has("--calls");
    for (size_t i = 0; i < paths.size(); ++i) {
      const backend::CallPath& c = paths[i];
      if (!all && c.impl != backend::CallImpl::Reference) continue;
      std::printf("  c%-5zu %-13s %-20s %-40s %s%s%s\n", i, backend::call_impl_name(c.impl), c.op.c_str(),
                  c.label.c_str(), c.kernel.c_str(), c.why.empty() ? "" : "  # ", c.why.c_str());
    }
  }
  if (plan.target == "cuda") {  // what the driver will load: the PTX, and the cubins beside it (cuda_abi.h "SASS")
    std::map<int64_t, std::pair<int64_t, int64_t>> sass;  // SM -> kernels, bytes
    int64_t ptx_bytes = 0;
    for (const plan::Kernel& k : plan.kernels) {
      if (k.options == plan::cuda::kPtxFormat) ptx_bytes += int64_t(k.source.size());
      for (int64_t sm : k.attrs.ints(plan::cuda::kSassSmsAttr)) {
        ++sass[sm].first;
        sass[sm].second += int64_t(k.attrs.s(plan::cuda::sass_attr(int(sm))).size());
      }
    }
    const std::string arch = plan.meta.s("cuda_arch", plan::cuda::Options().arch);
    std::printf("\ncuda code: PTX for %s (%s)", arch.c_str(), human_bytes(ptx_bytes).c_str());
    for (const auto& [sm, row] : sass)
      std::printf("; SASS for sm_%lld: %lld of %zu kernels (%s)", (long long)sm, (long long)row.first,
                  plan.kernels.size(), human_bytes(row.second).c_str());
    std::printf("%s\n", sass.empty() ? "; no SASS (every GPU JIT-compiles the PTX)" : "");
    // ptxas's report of each kernel's SASS (the first listed GPU's): what limits its occupancy.
    bool header = false;
    int spilling = 0;
    for (const plan::Kernel& k : plan.kernels) {
      if (!k.attrs.has(plan::cuda::kRegistersAttr)) continue;
      const std::vector<int64_t> spill = k.attrs.ints(plan::cuda::kSpillAttr, {-1, -1});
      if (!header)
        std::printf("  %-44s %6s %7s %13s %12s %12s\n", "kernel (SASS, ptxas -v)", "regs", "stack", "spill st/ld",
                    "static smem", "dynamic smem");
      header = true;
      std::printf("  %-44s %6lld %7lld %6lld/%-6lld %12lld %12lld\n", k.name.c_str(),
                  (long long)k.attrs.i(plan::cuda::kRegistersAttr), (long long)k.attrs.i(plan::cuda::kStackAttr, -1),
                  (long long)(spill.size() == 2 ? spill[0] : -1), (long long)(spill.size() == 2 ? spill[1] : -1),
                  (long long)k.attrs.i(plan::cuda::kStaticSmemAttr, -1), (long long)k.attrs.i("cuda_smem", 0));
      spilling += spill.size() == 2 && (spill[0] > 0 || spill[1] > 0);
    }
    if (header) std::printf("  kernels that spill registers: %d\n", spilling);
  }
  std::printf("\nbuffers by kind:\n");
  for (const auto& [kind, row] : s.buffers)
    std::printf("  %-8s %6lld  %s\n", plan::buffer_kind_name(kind), (long long)row.count,
                human_bytes(row.bytes).c_str());
  std::printf("\nweights      %s\n", human_bytes(s.weights_bytes).c_str());
  std::printf("arena        %s (without reuse: %s)\n", human_bytes(plan.arena_bytes).c_str(),
              human_bytes(plan::unplanned_bytes(plan)).c_str());
  std::printf("peak         %s (weights + arena + inputs + outputs)\n", human_bytes(s.peak_bytes).c_str());
  std::printf("FLOPs        %.4f GFLOP (conv %.4f, gemm/matmul %.4f, element-wise %.4f, other %.4f)\n",
              double(s.flops.total()) / kGiga, double(s.flops.conv) / kGiga, double(s.flops.matmul) / kGiga,
              double(s.flops.elementwise) / kGiga, double(s.flops.other) / kGiga);
  std::printf("bytes moved  %.3f MB (inputs + outputs of every call)\n", double(s.bytes_moved) / kMega);
  if (a.has("--dump")) std::cout << "\n" << plan.dump();
  return kExitOk;
}

}  // namespace opv::tools
