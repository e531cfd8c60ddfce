// Typed compile options of target "cuda" (compile --cuda-arch, --cuda-sass, --cuda-ffn, --cuda-ffn-dw,
// --cuda-pack, --cuda-se, --cuda-cluster, --cuda-stage, --cuda-heads, --cuda-pdl, --cuda-layout, --cuda-tune), handed to its plan passes in plan::PassCtx.
// Recorded in plan meta ("cuda_arch", "cuda_sass", "cuda_ffn", "cuda_ffn_dw", "cuda_pack", "cuda_se",
// "cuda_cluster", "cuda_stage", "cuda_pdl", "cuda_layout", "cuda_tune";
// only values that differ from the defaults) like the opencl options, so `opvision opt` and
// readers of an artifact see what the plan and its PTX were compiled with.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/attrs.h"

namespace opv::plan::cuda {

// The activation layout asked for (compile --cuda-layout; pass "cuda-layout", layout.cpp).
enum class LayoutChoice : uint8_t {
  Nchw,  // every activation Linear (NCHW), the pass does nothing
  Nhwc,  // 4-D activations channels-last from the first conv on, wherever the code generator has
         // an NHWC form, Reorder calls at the domain's edges
  Auto,  // the plan's choice: Nhwc where the plan has tensor-core 1x1 convs (compute_80+, fp16),
         // else Nchw
};
const char* layout_choice_name(LayoutChoice c);  // "nchw", "nhwc", "auto"
// Throws opv::Error unless `s` is nchw, nhwc or auto.
LayoutChoice parse_layout_choice(const std::string& s);

// Programmatic dependent launch (Options::pdl).
enum class PdlMode : uint8_t {
  Off,    // no prologue, ordinary graph edges (meta "cuda_pdl" 0)
  On,     // griddepcontrol.wait first (kernels with a weight prologue: after their weights): the next
          // kernel is launched as this one's blocks exit, before the kernel's completion is
          // signalled (attr 1; the default, meta absent). The fixture runs 2-6 % faster than with
          // Off on the H100 and 1-4 % on the H200 (BENCHMARKS.md, CUDA sessions 24-25)
  Early,  // griddepcontrol.launch_dependents, then the wait: the next kernel's blocks are launched
          // once every block of this one has started, and wait on the SMs (attr and meta 2). On the
          // H100 the fixture ran 1.26x slower so (BENCHMARKS.md, CUDA session 19); likely the early
          // blocks take SM room the running kernel's successors would have spread over (not
          // profiled).
  Prefetch,  // the kernel first loads what no kernel writes (weights, biases: the generators that
             // have such a prologue, kEntryOpenLate), then griddepcontrol.wait, then
             // griddepcontrol.launch_dependents: the next kernel's blocks are launched once every
             // block of this one is past its wait, so at most one kernel ahead sits on the SMs,
             // loading its weights while this one runs (attr and meta 3).
  Tail,      // griddepcontrol.wait first (as On); the kernels with a main loop (the tensor-core
             // convs, the ConvFFN, the depthwise pairs, the GEMVs) release the next kernel after
             // it (OPV_PDL_TRIGGER()), before their epilogue, the others as their blocks exit
             // (attr and meta 4).
};
const char* pdl_mode_name(PdlMode m);  // "off", "on", "early", "prefetch", "tail"

// Which fused ConvFFNs take the depthwise pair before them inside (Options::ffn_pair).
enum class FfnPairMode : uint8_t {
  Off,    // the pair stays a launch of its own (meta "cuda_ffn_pair" 0)
  Split,  // ConvFFNs whose hidden split is a thread-block cluster (compute_90+): each block of the
          // cluster computes the pair for its share of the channels (meta 1)
  All,    // those and the unsplit ConvFFNs (each block computes the pair on every channel of its
          // tile) (meta 2)
};
const char* ffn_pair_mode_name(FfnPairMode m);  // "off", "split", "all"
// Throws opv::Error unless `s` is off, split or all.
FfnPairMode parse_ffn_pair_mode(const std::string& s);
// Throws opv::Error unless `s` is off, on, early, prefetch or tail.
PdlMode parse_pdl_mode(const std::string& s);

// The code generators' sizing targets that a compile may override (compile --cuda-tune KEY=N,...;
// Options::tune): the block counts each kernel family's grid is sized towards. Their defaults are
// the values measured best so far (BENCHMARKS.md, CUDA); an override is for sweeping them on a GPU
// (bench/device_cuda.sh --base-flags), every value giving the same outputs up to summation
// order. Run 31 (H100, session 20) swept each both ways: all within the rounds' noise.
enum class TuneKey : uint8_t {
  FfnBlocks,     // "ffn_blocks": fused ConvFFN, blocks the hidden split aims at (pixel tiles x S)
  MmaBlocks,     // "mma_blocks": tensor-core 1x1 convs, blocks split-K aims at
  DwPairBlocks,  // "dwpair_blocks": depthwise pairs, blocks the row bands aim at
  ConvMmaBlocks,  // "convmma_blocks": implicit-GEMM convs (the stem), blocks the channel groups aim at
  FfnRing,       // "ffn_ring": fused ConvFFN, slab buffers of a block whose static ring holds two (a deep ring)
  DwPairR,       // "dwpair_r": depthwise pairs, the most outputs of a row a thread of the planes form (< 4: none)
  FfnBn,         // "ffn_bn": fused ConvFFN, the widest pixel tile (16, 32 or 64) of layers with many tiles
  ConvMmaRows,   // "convmma_rows": implicit-GEMM convs, the most output rows a block of layers with many tiles
  DwR,           // "dw_r": single depthwise convs, the most outputs of a row a thread of the planes form (< 4: none)
  DwRows,        // "dw_rows": the depthwise planes forms (single convs and pairs), the most output rows a thread
  FfnWarps,      // "ffn_warps": fused ConvFFN, warps a block of wide pixel tiles (4, or 8: each warp half the pixels)
  FfnResident,   // "ffn_resident": fused ConvFFN, the most weight slabs of a block held all at once (< 2: none)
  FfnClusterSlabs,  // "ffn_cluster_slabs": fused ConvFFN, the most slabs a block of a cluster split over the budget streams
  ClusterPush,   // "cluster_push": cluster splits (ConvFFN, split-K 1x1) push partials with st.async (1, default) or read them (0)
  FfnXRegs,      // "ffn_x_regs": fused ConvFFN with the weight prologue, X's tile staged through registers (1, default) or by cp.async (0)
  FfnSmAlone,    // "ffn_sm_alone": a cluster ConvFFN of about one wave asks for more than half an SM's shared memory, so no two of its blocks share an SM (1) or not (0)
  FfnClusterMax,  // "ffn_cluster_max": fused ConvFFN, the most blocks of a hidden split on a cluster (8: the portable size)
  Probe,         // "probe": every kernel records each block's clocks and SM (1; opvision bench --probe) or not (0, default)
  FfnFc1Chains,  // "ffn_fc1_chains": fused ConvFFN, fc1's accumulators a slab's k-steps alternate between (1, default; 2 halves each mma chain)
  FfnFc2Chains,  // "ffn_fc2_chains": fused ConvFFN, fc2's likewise (1, default; 2: the odd k-steps' sums added after the main loop)
  SeFold,        // "se_fold": the SE gate's cluster launch also computes the 1x1 conv (and a Reshape) after it (1), and the depthwise conv before it (2), or neither (0, default)
};
constexpr int kTuneKeys = 21;
struct TuneSpec {
  const char* name;
  int64_t dflt, lo, hi;
};
const TuneSpec& tune_spec(TuneKey k);

// The overrides of the TuneKey targets: unset keys take tune_spec(k).dflt.
struct Tune {
  int64_t value[kTuneKeys] = {};  // where set
  bool set[kTuneKeys] = {};       // unset keys take the default
  int64_t get(TuneKey k) const;
  void put(TuneKey k, int64_t v) { value[int(k)] = v, set[int(k)] = true; }
  // "key=N,key=N" of the set keys in TuneKey order ("" when none): the meta form.
  std::string str() const;
  // Parses "key=N[,key=N...]" (empty: no overrides); throws opv::Error naming the bad key or value
  // (an unknown key, a value outside [lo, hi], a key given twice).
  static Tune parse(const std::string& s);
  bool operator==(const Tune& o) const;
};

struct Options {
  // NVRTC's virtual architecture of the stored PTX ("compute_75" ... "compute_120"). The driver
  // JIT-compiles the PTX for the device it runs on, so any GPU of this generation or newer runs
  // it; compute_75 (Turing) is the oldest CUDA 13 supports.
  std::string arch = "compute_75";
  // The GPUs whose machine code (SASS, a cubin per kernel) the artifact also holds, beside the PTX
  // (compile --cuda-sass; plan pass nvrtc, kernel attrs cuda_abi.h "SASS"): "auto" (the default)
  // = the architecture's own GPU (sm_90 for compute_90), "none" = PTX alone, or a comma list of
  // sm_NN, each at least the architecture. A GPU of the same major version and at least the
  // cubin's minor loads the cubin instead of JIT-compiling the PTX (the backend picks; any other
  // GPU, or a driver that refuses the cubin, JIT-compiles the PTX as before).
  std::string sass = "auto";
  // The ConvFFN's fc1 -> GELU -> fc2 (+ residual) as one tensor-core launch where it fits
  // (compute_80+, codegen.h); false keeps fc1 and fc2 as two calls (a before/after of the fusion).
  bool fuse_ffn = true;
  // With fuse_ffn: the depthwise conv that alone feeds fc1 (FastViT's ConvFFN 7x7) computed inside
  // the fused ConvFFN kernel too, its output tile going straight to shared memory (ffn.cpp; layers
  // without a hidden split only); false keeps it a call of its own, paired with the RepMixer's
  // depthwise conv before it. Off by default: on the H200 the fold makes the inference slower (the
  // RepMixer's conv then runs alone, and the fused kernel's depthwise prologue is latency-bound:
  // BENCHMARKS.md, CUDA runs 14-16). compile --cuda-ffn-dw on turns it on.
  bool fuse_ffn_dw = false;
  // With fuse_ffn: the depthwise pair (RepMixer KxK -> the ConvFFN's KxK) whose outputs only the
  // fused ConvFFN after it reads (the second as fc1's input, the first as fc2's residual) computed
  // inside that kernel (ffn.cpp, FfnPairMode): one launch a FastViT block instead of two. Off by
  // default: on the H200 the fixture's ConvFFN with the pair inside took 17.3 us under ncu against
  // 8.0 + 3.9 us apart (ffn_128: 18.8 against 6.0 + 4.2; ffn_64 with `all`: 34 against 4.9 + 4.3),
  // and the inference 0.311 (split) and 0.374 ms (all) against 0.238 (BENCHMARKS.md, CUDA session
  // 31): each tile's blocks compute the first conv on the tile's halo too (7 x 22 outputs for 16),
  // on a quarter fewer blocks than the pair's launch, with the staging's index arithmetic on top.
  // compile --cuda-ffn-pair split|all turns it on.
  FfnPairMode ffn_pair = FfnPairMode::Off;
  // The input pack (Concat/Cast to float with element-wise post-ops: the uint8 frames' normalisation)
  // computed inside the dense conv that alone reads it (pack_conv.cpp): one launch and X's round
  // trip fewer. Off by default: on the H200 the scalar fused stem (31 us traced) was slower than the
  // pack and the stem as two launches (7.5 + 17.2 us; CUDA runs 12-13); the tensor-core form
  // (compute_80+, session 29) ties at batch 1 on the H100 and is slower at batch 32 (0.139 ms
  // against 0.082 + 0.038). compile --cuda-pack on turns it on.
  bool fuse_pack = false;
  // The squeeze-excitation gate (a global mean pool, a 1x1 conv, a 1x1 conv on a 1x1 map, each
  // result read only by the next, then the input scaled by the gate) as one launch (se.cpp;
  // outputs bit-identical to the four calls); false keeps the four calls (a before/after; meta
  // "cuda_se" = 0). compile --cuda-se off turns it off.
  bool fuse_se = true;
  // Fused ConvFFN layers that split their hidden chunks over S blocks (few pixel tiles) run those S
  // blocks as one thread-block cluster (compute_90+, S <= 16): the partial tiles stay in each
  // block's shared memory and every block adds its share of the tile from all S through distributed
  // shared memory, in split order (bit-identical), instead of global-memory partials, a counter and
  // the last block's sum (ffn.cpp); the SE gate's blocks of one image likewise share the pooled
  // vector and the first 1x1's outputs (se.cpp). false keeps the latter (a before/after; meta
  // "cuda_cluster" = 0).
  // compile --cuda-cluster off turns it off.
  bool cluster = true;
  // With cluster: a run of FastViT blocks (the depthwise pair, then the ConvFFN whose fc2 adds the
  // pair's first output) as one kernel on one thread-block cluster per image, the activations kept
  // in the blocks' shared memory from block to block (stage.cpp; compute_90+, where the stage's
  // shapes fit). Off by default: on the H200 the fixture's two stages take 136 + 61 us as one
  // cluster each against 82 + 33 us as their 20 launches (0.385 vs 0.291 ms end to end,
  // BENCHMARKS.md CUDA session 22): a cluster is 16 SMs whose warps each run the whole stage's
  // chain of latencies. compile --cuda-stage on turns it on (meta "cuda_stage" = 1).
  bool fuse_stage = false;
  // With cluster: chains of batched fp16 GEMVs (the heads' MLPs: layer j + 1's member g reading
  // layer j's member g alone) as one launch, a thread-block cluster per member, each layer's
  // vector handed to the next through distributed shared memory (heads.cpp; compute_90+;
  // bit-identical to the batched launches). compile --cuda-heads off keeps a launch a layer
  // (meta "cuda_heads" = 0).
  bool fuse_heads = true;
  // Programmatic dependent launch (compute_90+, PdlMode; kernel attr "cuda_pdl", cuda_abi.h): the
  // backend joins consecutive launches by programmatic graph edges, and each kernel waits
  // (griddepcontrol.wait), before its first memory access, until the kernels before it have
  // finished and their writes are visible (kernels with a weight prologue load their weights
  // first; where the prologue loads into registers, ptxas puts the wait before those loads in the
  // sm_90 SASS, session 26). compile --cuda-pdl off|on|early|prefetch|tail. On by default: with the weight prologues
  // it is faster than off on the H100 (0.263 vs 0.280 ms, run 43; per round 0.98 in run 44) and the
  // H200 (0.243 vs 0.249 ms, run 40; 0.265 vs 0.270, run 41; 0.284 vs 0.287, run 42; 0.263 vs 0.274,
  // run 45); early is slower on the H100 (session 19), prefetch and tail on the H200 (runs 40-41).
  PdlMode pdl = PdlMode::On;
  // The activation layout (LayoutChoice). NCHW by default: on the H200 the fixture's NHWC plan is
  // slower (0.379 vs 0.326 ms, BENCHMARKS.md CUDA runs 19-21) because the depthwise pairs (RepMixer
  // 3x3 + ConvFFN 7x7 in one launch) have no NHWC form: 25 single depthwise launches instead of 12.
  LayoutChoice layout = LayoutChoice::Nchw;
  // Overrides of the generators' sizing targets (Tune; meta "cuda_tune", only where set).
  Tune tune;

  // Throws opv::Error unless `arch` is "compute_<digits>" (for the CLI and from_meta).
  static void check_arch(const std::string& arch);
  // The SM numbers (90 for sm_90) `sass` names for `arch`, ascending and distinct; empty for
  // "none". Throws opv::Error for anything but auto, none or a list of sm_NN at least the arch.
  static std::vector<int> sass_sms(const std::string& sass, const std::string& arch);
  std::vector<int> sass_sms() const { return sass_sms(sass, arch); }
  // meta "cuda_arch" / "cuda_sass" / "cuda_ffn" / "cuda_ffn_dw" / "cuda_ffn_pair" / "cuda_pack" / "cuda_se" / "cuda_cluster" / "cuda_stage" / "cuda_heads" / "cuda_pdl" /
  // "cuda_layout" / "cuda_tune", each only when
  // not the default
  void record(Attrs& meta) const;
  static Options from_meta(const Attrs& meta);
  bool operator==(const Options& o) const {
    return arch == o.arch && sass == o.sass && fuse_ffn == o.fuse_ffn && fuse_ffn_dw == o.fuse_ffn_dw && ffn_pair == o.ffn_pair &&
           fuse_pack == o.fuse_pack &&
           fuse_se == o.fuse_se && cluster == o.cluster && fuse_stage == o.fuse_stage &&
           fuse_heads == o.fuse_heads && pdl == o.pdl && layout == o.layout && tune == o.tune;
  }
};

}  // namespace opv::plan::cuda
