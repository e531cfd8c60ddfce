// `opvision compile MODEL.onnx -o OUT.opv`: ONNX -> plan for a target -> .opv artifact.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "compiler/compile.h"
#include "plan/artifact.h"
#include "plan/passes/passes.h"
#include "tools/common.h"
#include "tools/pass_report.h"

namespace opv::tools {

namespace {

std::string plan_pass_help() {
  std::string r = "plan passes per target (in order; memory planning always runs last):\n";
  for (const std::string& t : backend::available()) {
    auto passes = plan::plan_passes_for(t);
    r += "  " + t + ":" + (passes.empty() ? " none\n" : "\n");
    for (const auto& p : passes) r += fmt("    %-16s %s\n", p.name, p.doc);
  }
  r += "--dump-after points: lower (as lowered, before any plan pass), each plan pass above that runs,\n"
       "compact, memory-plan (the final plan); 'all' dumps at every one of them.\n";
  return r;
}
}  // namespace

int cmd_compile(int argc, char** argv) {
  std::string targets;
  for (const std::string& b : backend::available()) targets += (targets.empty() ? "" : "|") + b;
  ArgParser p("opvision compile", "Compiles an ONNX model for a backend and writes the .opv artifact.",
              "MODEL.onnx -o OUT.opv [options]");
  p.positional("MODEL.onnx", "the ONNX model")
      .option("--output", "OUT.opv", "artifact to write (required)", "", "-o")
      .option("--target", targets, "backend the plan is compiled for", kDefaultBackend)
      .option("--passes", "A,B,..", "run only these plan passes of the target (mandatory ones always run)", "",
              "", true)
      .option("--no-pass", "NAME", "skip a graph or plan pass (or a comma list)", "", "", true)
      .option("--batch", "N", "samples per inference (any target): rewrites a batch-1 model so that every input's leading "
              "dimension is N (inputs [N, ...], outputs [N, ...], sample k's outputs computed from sample k's inputs "
              "alone), including the batch-1 shapes the model hard-codes (e.g. a Flatten/Reshape to [1, C]); refused, "
              "naming the node, where an op mixes samples or the leading 1 is not provably the batch. Recorded in the "
              "plan (meta batch, shown by inspect). Default: the model's own batch", "")
      .option("--cl-busy-items", "N", "opencl: work-items the GPU needs to stay busy (0 = sized for Adreno 630; "
              "large desktop GPUs ~65536)", "0")
      .option("--cl-batch", "N", "opencl: most calls plan pass batch merges into one launch (default 4, "
              "as the seed; at most 64)", "4")
      .option("--cl-tune", "KEY=N", "opencl: set a kernel-tuning plan meta value (cl_ks_max_lanes, "
              "cl_ks_min_steps: the dense conv K-split limits; cl_dw_split_min_taps: depthwise row split); "
              "repeatable", "", "", true)
      .option("--cl-images", "image|buffer", "opencl: storage of image-layout activations: image2d (default; "
              "Adreno) or global buffers with the same texel layout (cheaper kernel chains on NVIDIA)", "image")
      .option("--cl-weights", "f16|f32", "opencl: storage of packed conv weights (f32 spares GPUs without fp16 "
              "arithmetic the conversions; twice the bytes)", "f16")
      .option("--cuda-arch", "compute_NN", "cuda: virtual architecture of the stored PTX (the driver compiles it for the "
              "GPU it runs on; compute_75 = Turing and newer)", "compute_75")
      .option("--cuda-sass", "auto|none|sm_NN[,sm_NN...]", "cuda: the GPUs whose machine code (SASS, NVRTC's cubin "
              "per kernel) the artifact also holds beside the PTX: auto = the --cuda-arch's own GPU (sm_90 for "
              "compute_90), none = PTX alone, or a list, each at least the arch (sm_80,sm_86,sm_89). A GPU of the same "
              "major version and at least that minor loads the cubin instead of JIT-compiling the PTX (run "
              "--cuda-code ptx to JIT anyway). Recorded in the plan when not auto", "auto")
      .option("--cuda-ffn", "on|off", "cuda: the ConvFFN's fc1 -> GELU -> fc2 (+ residual) as one tensor-core launch "
              "where it fits (compute_80+); off keeps them as two calls. Recorded in the plan when off", "on")
      .option("--cuda-ffn-dw", "on|off", "cuda: with --cuda-ffn on, the depthwise conv that alone feeds fc1 (FastViT's "
              "ConvFFN 7x7) computed inside the fused ConvFFN kernel too (layers without a hidden split); slower on the "
              "H200 so far (BENCHMARKS.md). Recorded in the plan when on", "off")
      .option("--cuda-ffn-pair", "off|split|all", "cuda: with --cuda-ffn on, the depthwise pair before a fused ConvFFN "
              "(FastViT's RepMixer 3x3 -> ConvFFN 7x7) computed inside that kernel: split = where the ConvFFN's hidden split "
              "is a thread-block cluster (compute_90+; each block computes its share of the channels), all = also the unsplit "
              "ConvFFNs. Bit-identical to the pair's own launch, but slower on the H200 so far (BENCHMARKS.md). Recorded in "
              "the plan when not off", "off")
      .option("--cuda-pack", "on|off", "cuda: compute the uint8 input pack (Concat/Cast + normalisation) inside the stem "
              "convolution that alone reads it: one launch fewer, bit-identical (from compute_80 through a compile-time table of "
              "the pack's values), but not faster: a tie at batch 1 and slower at batch 32 on the H100 (BENCHMARKS.md). "
              "Recorded in the plan when on", "off")
      .option("--cuda-se", "on|off", "cuda: the squeeze-excitation gate (mean pool -> 1x1 conv -> 1x1 conv -> scale of "
              "the input) as one launch where it fits (compute_80+; bit-identical to the four calls); off keeps the four "
              "calls (a before/after of the fusion). Recorded in the plan when off", "on")
      .option("--cuda-cluster", "on|off", "cuda: layers whose fused ConvFFN splits its hidden channels over blocks add "
              "the split partials inside a thread-block cluster, through distributed shared memory (compute_90+; "
              "bit-identical), and the squeeze-excitation gate's blocks of one image share its pooled vector and "
              "first 1x1 the same way; off keeps the global-memory partials and the last block's sum, and every SE "
              "block pooling on its own (a before/after). Recorded in the plan when off", "on")
      .option("--cuda-stage", "on|off", "cuda: with --cuda-cluster on, a run of FastViT blocks (depthwise pair -> "
              "ConvFFN + residual) as one kernel on a thread-block cluster per image, the activations kept in shared "
              "memory from block to block (compute_90+, where the shapes fit); slower on the H200 so far "
              "(BENCHMARKS.md). Recorded in the plan when on", "off")
      .option("--cuda-heads", "on|off", "cuda: with --cuda-cluster on, chains of batched GEMVs (the output heads' "
              "MLPs, each layer reading the one before alone) as one launch, a thread-block cluster per head "
              "(compute_90+; bit-identical); off keeps a launch per layer. Recorded in the plan when off", "on")
      .option("--cuda-pdl", "off|on|early|prefetch|tail", "cuda: programmatic dependent launch (compute_90+): programmatic graph "
              "edges between kernels, each kernel waiting for the ones before it at its start (kernels with a weight "
              "prologue: after loading their weights); on: the next kernel is "
              "launched as this one's blocks exit; early: as soon as they have all started (they wait on the SMs); "
              "prefetch: as soon as they are all past their wait (one kernel ahead); tail: as they finish their main "
              "loop; "
              "off: ordinary edges. on is the default: 2-6 % faster than off on the H100, 1-4 % on the H200; early, "
              "prefetch and tail are slower (BENCHMARKS.md). Recorded in the plan when not on", "on")
      .option("--cuda-layout", "auto|nchw|nhwc", "cuda: activation layout: nchw (every buffer row-major), nhwc "
              "(4-D activations channels-last from the first conv on, reorders where an op needs NCHW), "
              "auto (the plan's choice: nhwc where it has tensor-core 1x1 convs, compute_80+ fp16). Recorded in the plan "
              "(meta cuda_layout_plan); nchw is the default: nhwc is slower on the H200 (0.379 vs 0.326 ms, BENCHMARKS.md)", "nchw")
      .option("--cuda-tune", "KEY=N", "cuda: override a code generator's sizing target, for sweeps on a GPU "
              "(bench/device_cuda.sh --base-flags): ffn_blocks (fused ConvFFN blocks, default 96), mma_blocks (tensor-core "
              "1x1 split-K blocks, 64), dwpair_blocks (depthwise-pair row bands, 256), convmma_blocks (implicit-GEMM conv "
              "channel groups, 256), ffn_ring (weight slab buffers, in dynamic shared memory, of a fused ConvFFN block whose "
              "static ring holds only two: wide layers, 10; 2 keeps the static ring), dwpair_r (the most outputs of a row a thread "
              "of the depthwise pairs' several-planes-a-block form, taken where the planes are many: 4; below 4 keeps a block "
              "per plane or band everywhere), ffn_bn (the widest pixel tile, 16, 32 or 64, of a fused ConvFFN with many "
              "tiles: 64; 16 keeps 16-pixel tiles), convmma_rows (the most output rows a block of an implicit-GEMM conv "
              "with many row segments, such as a batched stem: 4; 1 keeps a row a block), dw_r (the most outputs of a row a "
              "thread of single depthwise convs taken several planes a block where the planes are many, such as a batched "
              "7x7 stride-2 downsample: 4; below 4 keeps a thread per output), dw_rows (the most output rows a thread of those two "
              "depthwise forms: 4; 1 a row), ffn_warps (8: at compute_90 a fused ConvFFN of 256 KB of weights or more that "
              "keeps 16-pixel tiles on 4 warps takes 64- or 32-pixel tiles on 8 warps split over a cluster; 4 keeps 16), "
              "ffn_resident (a fused ConvFFN block of at most N weight slabs holds them all in dynamic shared memory, every "
              "one loaded before the wait for the kernel before: 1, off), ffn_cluster_slabs (at compute_90 a fused ConvFFN whose "
              "hidden split has more partials than one block adds sums them through its cluster where each block streams "
              "at most N weight slabs, so such layers fuse, e.g. the fixture's stage 3 at batch 1 with 32: 1, never), cluster_push (at "
              "compute_90 the blocks of a cluster split, ConvFFN or split-K 1x1, push each peer's share of their partial "
              "into it with st.async, counted by an mbarrier: 1; 0 keeps every block reading its share from all peers "
              "between two cluster barriers), ffn_x_regs (a fused ConvFFN with the weight prologue stages X's tile through "
              "registers: 1; 0 keeps its cp.async group), ffn_sm_alone (a cluster ConvFFN of about one wave pads its shared "
              "memory past half an SM so no two of its blocks share one: 0, off), ffn_cluster_max (the most blocks of a "
              "fused ConvFFN's hidden split on a cluster: 8, the portable size), probe (every kernel records each block's "
              "clocks and SM for bench --probe: 0, off; a measuring build), ffn_fc1_chains (a fused ConvFFN's fc1 sums "
              "its even and odd k-steps in two accumulator chains: 1, one chain; 2 is opt-in, not yet timed), "
              "ffn_fc2_chains (the same for its fc2: 1; 2 opt-in), se_fold (at compute_90 the squeeze-excitation gate's "
              "cluster launch also computes the 1x1 conv after it, with a Reshape of its output (1), and the depthwise conv "
              "before it (2): 0, off; on an H100 2 was slower, session 40); repeatable. Recorded in the "
              "plan (meta cuda_tune)", "", "", true)
      .flag("--report", "per plan pass: launches, kernel calls, weight bytes and measured time before/after")
      .flag("--verbose", "print per-pass progress to stderr", "-v")
      .flag("--dump-plan", "print the compiled plan to stdout")
      .option("--dump-after", "PASS", "print the plan to stdout after this plan pass (or a comma list; 'all': after "
              "every pass; 'list': print the dump points of --target and exit)", "", "", true)
      .epilog(plan_pass_help());
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  const std::vector<std::string> dump_after = split_names(a.all("--dump-after"));
  if (std::find(dump_after.begin(), dump_after.end(), "list") != dump_after.end()) {
    for (const std::string& point : plan::dump_points(a.get("--target", kDefaultBackend))) std::cout << point << "\n";
    return kExitOk;
  }
  if (!a.has("--output")) throw UsageError("opvision compile: missing -o OUT.opv (see 'opvision compile --help')");

  CompileOptions opts;
  opts.target = a.get("--target", kDefaultBackend);
  opts.disable_passes = split_names(a.all("--no-pass"));
  opts.only_passes = split_names(a.all("--passes"));
  opts.verbose = a.has("--verbose");
  if (a.has("--batch")) opts.batch = a.get_int("--batch", 0, 1, kMaxCompileBatch);
  plan::cl::Options& cl = opts.pass_ctx.cl;
  cl.busy_items = a.get_int("--cl-busy-items", 0, 0, int64_t(1) << 30);
  cl.batch_max = a.get_int("--cl-batch", cl.batch_max);
  if (cl.batch_max < 1 || cl.batch_max > plan::cl::kMaxBatchLimit)
    throw UsageError("opvision compile: --cl-batch must be in 1.." + std::to_string(plan::cl::kMaxBatchLimit));
  for (const std::string& kv : a.all("--cl-tune")) {
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    if (eq == std::string::npos || !plan::cl::Options().set_tune(key, 0))
      throw UsageError(std::string("opvision compile: --cl-tune wants KEY=N with KEY one of ") +
                       plan::cl::Options::tune_keys() + ", got '" + kv + "'");
    char* end = nullptr;
    const long long v = std::strtoll(kv.c_str() + eq + 1, &end, 10);
    if (end == kv.c_str() + eq + 1 || *end != '\0' || v < 1 || v > 1024)
      throw UsageError("opvision compile: --cl-tune " + key + " must be an integer in 1..1024, got '" + kv + "'");
    cl.set_tune(key, int64_t(v));
  }
  const std::string images = a.get("--cl-images", "image");
  if (images != "image" && images != "buffer")
    throw UsageError("opvision compile: --cl-images must be image or buffer, got '" + images + "'");
  cl.images_in_buffers = images == "buffer";
  const std::string weights = a.get("--cl-weights", "f16");
  if (weights != "f16" && weights != "f32")
    throw UsageError("opvision compile: --cl-weights must be f16 or f32, got '" + weights + "'");
  cl.weight_dtype = weights == "f32" ? DType::F32 : DType::F16;
  opts.pass_ctx.cuda.arch = a.get("--cuda-arch", opts.pass_ctx.cuda.arch);
  try {
    plan::cuda::Options::check_arch(opts.pass_ctx.cuda.arch);
  } catch (const Error& e) {
    throw UsageError(std::string("opvision compile: --cuda-arch: ") + e.what());
  }
  opts.pass_ctx.cuda.sass = a.get("--cuda-sass", opts.pass_ctx.cuda.sass);
  try {
    plan::cuda::Options::sass_sms(opts.pass_ctx.cuda.sass, opts.pass_ctx.cuda.arch);
  } catch (const Error& e) {
    throw UsageError(std::string("opvision compile: --cuda-sass: ") + e.what());
  }
  opts.pass_ctx.cuda.fuse_ffn = on_off(a, "--cuda-ffn", "on");
  opts.pass_ctx.cuda.fuse_ffn_dw = on_off(a, "--cuda-ffn-dw", "off");
  try {
    opts.pass_ctx.cuda.ffn_pair = plan::cuda::parse_ffn_pair_mode(a.get("--cuda-ffn-pair", "off"));
  } catch (const Error& e) {
    throw UsageError(std::string("opvision compile: --cuda-ffn-pair: ") + e.what());
  }
  opts.pass_ctx.cuda.fuse_pack = on_off(a, "--cuda-pack", "off");
  opts.pass_ctx.cuda.fuse_se = on_off(a, "--cuda-se", "on");
  opts.pass_ctx.cuda.cluster = on_off(a, "--cuda-cluster", "on");
  opts.pass_ctx.cuda.fuse_stage = on_off(a, "--cuda-stage", "off");
  opts.pass_ctx.cuda.fuse_heads = on_off(a, "--cuda-heads", "on");
  try {
    opts.pass_ctx.cuda.pdl = plan::cuda::parse_pdl_mode(a.get("--cuda-pdl", "on"));
  } catch (const Error& e) {
    throw UsageError(std::string("opvision compile: --cuda-pdl: ") + e.what());
  }
  try {
    opts.pass_ctx.cuda.layout = plan::cuda::parse_layout_choice(a.get("--cuda-layout", "nchw"));
  } catch (const Error& e) {
    throw UsageError(std::string("opvision compile: --cuda-layout: ") + e.what());
  }
  try {
    std::string tune;
    for (const std::string& kv : a.all("--cuda-tune")) tune += (tune.empty() ? "" : ",") + kv;
    opts.pass_ctx.cuda.tune = plan::cuda::Tune::parse(tune);
  } catch (const Error& e) {
    throw UsageError(std::string("opvision compile: --cuda-tune: ") + e.what());
  }
  PassReport report;
  opts.dump_after = dump_after;
  opts.dump_to = &std::cout;
  opts.report = a.has("--report");
  if (opts.report) opts.observer = report.observer();
  // Fail early on an unknown target rather than after compiling.
  bool known = false;
  for (const std::string& b : backend::available()) known |= b == opts.target;
  if (!known) throw UsageError("opvision compile: unknown --target '" + opts.target + "' (available: " + targets + ")");

  const std::string& model = a.positionals[0];
  double t0 = now_ms();
  plan::Plan plan = compile_onnx(model, opts);
  double t1 = now_ms();
  std::string out = a.get("--output");
  plan::save_artifact(plan, out);
  if (a.has("--dump-plan")) std::cout << plan.dump();
  if (opts.report) report.print(stdout);
  std::fprintf(stderr,
               "[compile] %s -> %s: target %s, %zu calls, %zu kernels, %zu buffers, weights %zu B, arena %lld B "
               "(%.0f ms)\n",
               model.c_str(), out.c_str(), plan.target.c_str(), plan.calls.size(), plan.kernels.size(),
               plan.buffers.size(), plan.weights.size(), (long long)plan.arena_bytes, t1 - t0);
  return kExitOk;
}

}  // namespace opv::tools
