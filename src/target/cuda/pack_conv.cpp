/* The input pack folded into the conv that reads it (part of plan pass "cuda-codegen", codegen.h):
 *   1. fuse_pack_conv: a call that makes a float tensor X element by element from its inputs -- a
 *      Concat (any axis) or a Cast, with element-wise post-ops (openpilot's pack: two uint8 frames
 *      -> Concat -> Cast -> Sub mean -> Div std, one call after fuse_concat_cast) -- whose output
 *      one later call alone reads, a dense non-1x1 conv of the multi-channel family (the stem),
 *      becomes that conv's call (cuda_abi.h "pack"); X is never stored. Opt-in
 *      (Options::fuse_pack): never faster than the two launches so far (below).
 *   2. pack_conv: that call's kernel. Where the tensor-core family takes the conv (conv_mma.cpp,
 *      compute_80+, an fp16 X) it stages X from the frames itself: a byte and a look-up in X's
 *      [C, 256] fp16 table, which fuse_pack_conv computes at compile time where that is exact
 *      (pack_table), else the pack's post-ops on each staged element. Otherwise conv_multi with
 *      every X element computed where it is read: the selected input's element, the pack's
 *      post-ops, rounded to X's dtype. Where the inputs
 *      are uint8 and the post-op operands vary at most along the channels, X(n, c, h, w) depends
 *      only on (c, byte): each block first tabulates those
 *      C x 256 values in shared memory (one Div each instead of one per tap and output group),
 *      and a tap is a byte load and a table read.
 * Measured, the tensor-core form (session 29, H100, runs 61-62): batch 1 0.246 vs 0.247 ms a replay
 * (a tie), batch 32 the fused stem 0.139 ms against 0.082 + 0.038 apart with the table (0.188 with a
 * division an element). The conv_multi form (runs 12-13, the fp16 fixture, traced): the fused stem 31.2 us
 * against 7.5 (pack) + 17.6 (stem) apart (run 12); with 256-thread blocks (the table filled half as often)
 * 36.6 us. A tap is now a byte load and a data-dependent shared-memory read (bank conflicts on
 * random bytes) where it was one fp16 load; the table is filled once per block (512 blocks).
 * Invariant: the fused call computes what the pack and the conv compute as two calls: every X
 * element is the value the pack would have stored (same float expression, same rounding), and the
 * conv sums the same products in the same order; padding taps read 0 as before.
 */
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "target/c_expr.h"
#include "target/cuda/codegen_internal.h"

namespace opv::plan::cuda::detail {

namespace {

constexpr int64_t kByteValues = 256;                 // table rows per channel (uint8 inputs)
constexpr int64_t kPackSmemBytes = (48 << 10) - 1024;  // static shared memory: table + conv weights
constexpr const char* kCoord[4] = {"o0", "c", "ih", "iw"};  // X's coordinates in conv_multi's loop

// The data inputs (the concatenated ones; a Cast's one) of a pack call, and its concat axis; 0
// when the call is not a pack this file folds.
struct Pack {
  size_t n_cat = 0;
  int64_t axis = 1;
};
Pack pack_of(const Plan& p, const Call& a, const std::vector<int>& readers) {
  const Kernel& k = p.kernels.at(size_t(a.kernel));
  if ((k.op != OpKind::Concat && k.op != OpKind::Cast) || !k.source.empty() || k.attrs.has("cl_batch") ||
      a.outputs.size() != 1 || a.inputs.empty())
    return {};
  const Buffer& X = p.buffers.at(size_t(a.outputs[0]));
  if (X.kind != BufferKind::Intermediate || X.layout != Layout::Linear || X.shape.size() != 4 ||
      (X.dtype != DType::F16 && X.dtype != DType::F32) || readers.at(size_t(a.outputs[0])) != 1)
    return {};
  Pack pk;
  pk.n_cat = k.op == OpKind::Cast ? 1 : a.inputs.size();
  for (const PostOp& po : k.post_ops) {
    if (po.input < 0) {
      if (unary_expr(po, "v").empty()) return {};
      continue;
    }
    if (po.input == 0 || size_t(po.input) >= a.inputs.size() || a.inputs[size_t(po.input)] < 0 ||
        binary_expr(po.op, "a", "b").empty())
      return {};
    const Buffer& b = p.buffers.at(size_t(a.inputs[size_t(po.input)]));
    if (!is_float(b.dtype) || b.layout != Layout::Linear || !broadcasts_to(b.shape, X.shape) || !c_type(b.dtype))
      return {};
    pk.n_cat = std::min(pk.n_cat, size_t(po.input));
  }
  pk.axis = k.op == OpKind::Concat ? k.attrs.i("axis", 0) : 1;
  if (pk.axis < 0 || pk.axis >= 4) return {};
  int64_t along = 0;
  for (size_t j = 0; j < pk.n_cat; ++j) {
    if (a.inputs[j] < 0) return {};
    const Buffer& b = p.buffers.at(size_t(a.inputs[j]));
    if (b.shape.size() != 4 || b.layout != Layout::Linear || !c_type(b.dtype)) return {};
    for (int64_t d = 0; d < 4; ++d)
      if (d != pk.axis && b.shape[size_t(d)] != X.shape[size_t(d)]) return {};
    along += b.shape[size_t(pk.axis)];
  }
  if (along != X.shape[size_t(pk.axis)]) return {};
  return pk;
}

// Whether the conv call `b` reads the pack's output X only as its input 0 and is a conv that
// generate() gives to conv_multi (dense, not 1x1: no tiled or tensor-core 1x1 family applies).
bool conv_takes_pack(const Plan& p, const Call& b, int X) {
  const Kernel& k = p.kernels.at(size_t(b.kernel));
  if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.has("cl_batch") || b.outputs.size() != 1 ||
      b.inputs.size() < 2 || b.inputs[0] != X || b.inputs[1] < 0)
    return false;
  for (size_t j = 1; j < b.inputs.size(); ++j)
    if (b.inputs[j] == X) return false;
  const Buffer& W = p.buffers.at(size_t(b.inputs[1]));
  const Buffer& Y = p.buffers.at(size_t(b.outputs[0]));
  if (W.shape.size() != 4 || W.shape[2] * W.shape[3] <= 1 || Y.layout != Layout::Linear || !c_type(Y.dtype) ||
      !c_type(W.dtype))
    return false;
  Ctx x{p, b, k};
  x.sm = plan_sm(p);
  std::string why;
  return conv_multi_co(x) > 0 && post_ops_ok(x, &why);
}

// The size of an operand of shape `s` (broadcast to X's 4 dims) along X's channel axis, or -1 where
// it varies along another axis too.
int64_t channel_extent(const Shape& s) {
  int64_t along = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    const bool chan = d + 4 - s.size() == 1;
    if (s[d] != 1 && !chan) return -1;
    if (chan) along = s[d];
  }
  return along;
}

// The pack's X as a table of fp16 values by (channel, byte), computed here at compile time, for
// the tensor-core stem (compute_80+) to look up instead of normalising every staged element (a
// float division each: the batch-32 stem took 0.188 ms against 0.083 + 0.040 apart, session 29
// run 61). Only where that is X exactly as the pack kernel computes it: uint8 data inputs, an fp16
// X, binary post-ops Add/Sub/Mul/Div with plan-constant operands varying at most along the
// channels, none of Add/Sub after a Mul (NVRTC's --fmad=true could fuse them into one rounding),
// the steps in float as the kernel takes them (IEEE single, round to nearest: the host's SSE and
// the GPU's default division agree), rounded to fp16 at the end; no NaN (the two conversions may
// spell it differently). Returns the table's buffer id, or -1.
int pack_table(Plan& p, const Call& a, const Pack& pk) {
  const Kernel& k = p.kernels.at(size_t(a.kernel));
  const Buffer& X = p.buffers.at(size_t(a.outputs[0]));
  if (X.dtype != DType::F16 || pk.axis != 1) return -1;
  for (size_t j = 0; j < pk.n_cat; ++j)
    if (p.buffers.at(size_t(a.inputs[j])).dtype != DType::U8) return -1;
  const int64_t C = X.shape[1];
  struct Step {
    OpKind op;
    bool swapped;
    std::vector<float> v;  // the operand by channel
  };
  std::vector<Step> steps;
  bool mul = false;
  for (const PostOp& po : k.post_ops) {
    if (po.input < 0 || (po.op != OpKind::Add && po.op != OpKind::Sub && po.op != OpKind::Mul && po.op != OpKind::Div))
      return -1;
    if (mul && (po.op == OpKind::Add || po.op == OpKind::Sub)) return -1;
    mul |= po.op == OpKind::Mul;
    const int id = a.inputs.at(size_t(po.input));
    const Buffer& b = p.buffers.at(size_t(id));
    if (b.kind != BufferKind::Constant || (b.dtype != DType::F16 && b.dtype != DType::F32)) return -1;
    const int64_t along = channel_extent(b.shape);
    if (along != 1 && along != C) return -1;
    const uint8_t* raw = p.constant_data(id);
    Step st{po.op, po.swapped, std::vector<float>(size_t(C))};
    for (int64_t c = 0; c < C; ++c) {
      const int64_t e = along == 1 ? 0 : c;
      if (b.dtype == DType::F16) {
        uint16_t h;
        std::memcpy(&h, raw + e * 2, 2);
        st.v[size_t(c)] = half_to_float(h);
      } else {
        std::memcpy(&st.v[size_t(c)], raw + e * 4, 4);
      }
    }
    steps.push_back(std::move(st));
  }
  std::vector<uint16_t> tab(size_t(C * kByteValues));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t byte = 0; byte < kByteValues; ++byte) {
      volatile float v = float(byte);  // volatile: each step rounded to float, as the kernel's
      for (const Step& st : steps) {
        const float o = st.v[size_t(c)], x = v;
        switch (st.op) {
          case OpKind::Add: v = x + o; break;
          case OpKind::Sub: v = st.swapped ? o - x : x - o; break;
          case OpKind::Mul: v = x * o; break;
          default: v = st.swapped ? o / x : x / o; break;
        }
      }
      const float r = v;
      if (r != r) return -1;
      tab[size_t(c * kByteValues + byte)] = float_to_half(r);
    }
  return p.add_constant(X.name + "_pack_table", DType::F16, Shape{C, kByteValues}, Layout::Linear, tab.data(),
                        tab.size() * 2);
}

}  // namespace

// Plan form: one call at the conv's place; output = the conv's; inputs = the conv's with slot 0 =
// the pack's input 0 and slot 2 present (-1 without a bias), then the pack's inputs 1.. (slot
// from + j - 1 for its input j); kernel = the conv's with "cl_batch" = 2, "cuda_pack_conv" = 1,
// post-ops = the conv's then the pack's (operands moved to their new slots),
// "cuda_batch_post_ops" = their counts, and X's description: "cuda_pack_shape", "cuda_pack_dtype",
// "cuda_pack_axis", "cuda_pack_cat" (data inputs), "cuda_pack_from" (the first moved slot); where
// the conv is the tensor-core family's (conv_mma_ok) and pack_table gives one, X's table [C, 256]
// as the last input ("cuda_pack_table": its slot).
void fuse_pack_conv(Plan& p) {
  std::vector<int> readers = reader_counts(p);
  std::vector<char> drop(p.calls.size(), 0);
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const Call& a = p.calls[i];
    const Pack pk = pack_of(p, a, readers);
    if (!pk.n_cat) continue;
    const int X = a.outputs[0];
    size_t r = i + 1;
    while (r < p.calls.size() && std::find(p.calls[r].inputs.begin(), p.calls[r].inputs.end(), X) == p.calls[r].inputs.end())
      ++r;
    if (r == p.calls.size() || drop[r] || !conv_takes_pack(p, p.calls[r], X)) continue;
    bool narrow = true;  // the kernel indexes with int (pack_conv)
    const Call& rc = p.calls[r];
    for (const std::vector<int>* ids : {&a.inputs, &a.outputs, &rc.inputs, &rc.outputs})
      for (int id : *ids)
        if (id >= 0) narrow &= numel(p.buffers.at(size_t(id)).shape) <= INT32_MAX / 2;
    if (!narrow) continue;
    // Before memory planning every buffer has one writer, so the pack's inputs (written before it)
    // still hold their values at the conv's place: computing X there changes nothing.
    const Call& b = p.calls[r];
    const Kernel& ak = p.kernels.at(size_t(a.kernel));
    const Kernel& bk = p.kernels.at(size_t(b.kernel));
    const Buffer& Xb = p.buffers.at(size_t(X));
    const size_t from = std::max<size_t>(3, b.inputs.size());
    Kernel k = bk;
    k.name = bk.name + "_pack_" + dtype_name(p.buffers.at(size_t(a.inputs[0])).dtype);
    for (PostOp po : ak.post_ops) {
      if (po.input > 0) po.input += int(from) - 1;
      k.post_ops.push_back(po);
    }
    k.attrs.set("cl_batch", int64_t(2));
    k.attrs.set("cuda_pack_conv", int64_t(1));
    k.attrs.set("cuda_batch_post_ops", std::vector<int64_t>{int64_t(bk.post_ops.size()), int64_t(ak.post_ops.size())});
    k.attrs.set("cuda_pack_shape", std::vector<int64_t>(Xb.shape.begin(), Xb.shape.end()));
    k.attrs.set("cuda_pack_dtype", int64_t(Xb.dtype));
    k.attrs.set("cuda_pack_axis", pk.axis);
    k.attrs.set("cuda_pack_cat", int64_t(pk.n_cat));
    k.attrs.set("cuda_pack_from", int64_t(from));
    Call f;
    f.label = a.label + "+" + b.label;
    f.outputs = b.outputs;
    f.inputs = b.inputs;
    f.inputs.resize(from, -1);
    f.inputs[0] = a.inputs[0];
    f.inputs.insert(f.inputs.end(), a.inputs.begin() + 1, a.inputs.end());
    Ctx bx{p, b, bk};
    bx.sm = plan_sm(p);
    if (conv_mma_ok(bx))  // the tensor-core stem (compute_80+) will take it
      if (const int tab = pack_table(p, a, pk); tab >= 0) {
        k.attrs.set("cuda_pack_table", int64_t(f.inputs.size()));
        f.inputs.push_back(tab);
      }
    f.kernel = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
    p.calls[r] = std::move(f);
    drop[i] = 1;
    --readers[size_t(X)];
  }
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size(); ++i)
    if (!drop[i]) calls.push_back(std::move(p.calls[i]));
  p.calls = std::move(calls);
}

Generated pack_conv(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  const std::vector<int64_t> xsv = k.attrs.ints("cuda_pack_shape");
  const int64_t from = k.attrs.i("cuda_pack_from", 0), n_cat = k.attrs.i("cuda_pack_cat", 0);
  const int64_t axis = k.attrs.i("cuda_pack_axis", 1);
  const DType xdt = DType(k.attrs.i("cuda_pack_dtype", int64_t(DType::F16)));
  if (npo.size() != 2 || size_t(npo[0] + npo[1]) != k.post_ops.size() || xsv.size() != 4 || from < 3 || n_cat < 1 ||
      axis < 0 || axis >= 4 || c.outputs.size() != 1 || c.inputs.size() < size_t(from + n_cat - 1) ||
      (xdt != DType::F16 && xdt != DType::F32))
    return gen.why = "pack conv call out of shape", gen;
  const Shape xs(xsv.begin(), xsv.end());
  auto slot = [&](int64_t j) { return j == 0 ? size_t(0) : size_t(from + j - 1); };  // pack input j
  for (int64_t j = 0; j < n_cat; ++j)
    if (c.inputs.at(slot(j)) < 0) return gen.why = "pack conv: an absent data input", gen;
  Kernel kc = k;  // the conv as conv_multi sees it: its own post-ops only
  kc.post_ops.resize(size_t(npo[0]));
  Ctx x{p, c, kc};
  x.sm = plan_sm(p);
  const int64_t co = conv_multi_co(x);
  std::string why;
  if (co <= 0 || !post_ops_ok(x, &why)) return gen.why = "pack conv: the conv family refuses: " + why, gen;
  const Buffer& W = x.in(1);
  const int64_t C = xs[1], taps = W.shape[1] * W.shape[2] * W.shape[3];
  if (W.shape[1] != C) return gen.why = "pack conv: weight channels differ from X's", gen;

  // The pack's post-ops on `v` at X's coordinates o0..o3 (a __device__ function; its parameters
  // are named after the kernel's, so the same expressions serve both), rounded to X's dtype.
  std::string norm_params, norm_args;
  std::set<std::string> operands;
  std::ostringstream norm;
  bool by_channel = true;  // every operand varies at most along X's axis 1
  for (size_t q = size_t(npo[0]); q < k.post_ops.size(); ++q) {
    const PostOp& po = k.post_ops[q];
    if (po.input < 0) {
      norm << "  v = " << unary_expr(po, "v") << ";\n";
      continue;
    }
    const Buffer& b = x.in(size_t(po.input));
    const std::string name = x.in_name(size_t(po.input));
    if (operands.insert(name).second) {
      norm_params += input_param(x.p, c, size_t(po.input), c_type(b.dtype));  // declares `name`
      norm_args += ", " + name;
    }
    const std::string e = load(b.dtype, name, bcast_offset(xs, b.shape));
    norm << "  v = " << (po.swapped ? binary_expr(po.op, e, "v") : binary_expr(po.op, "v", e)) << ";\n";
    by_channel &= channel_extent(b.shape) >= 0;
  }
  // The selected data input at X's coordinates (o0, c, ih, iw): of(name, dtype, off) spells input
  // `name` at element offset `off`; the inputs chosen by the concat axis' coordinate.
  auto select = [&](auto of) {
    std::string e;
    int64_t start = 0;
    for (int64_t j = 0; j < n_cat; ++j) {
      const Buffer& b = p.buffers.at(size_t(c.inputs[slot(j)]));
      const std::vector<int64_t> st = row_major_strides(b.shape);
      std::string off;
      for (int d = 0; d < 4; ++d)
        off += std::string(off.empty() ? "(" : " + (") + kCoord[d] + (d == axis && start ? " - " + I(start) : "") +
               ") * " + I(st[size_t(d)]);
      const std::string v = of("in" + std::to_string(slot(j)), b.dtype, off);
      start += b.shape[size_t(axis)];
      e = j + 1 == n_cat ? (e.empty() ? v : e + v + std::string(size_t(j), ')'))
                         : e + "(" + kCoord[axis] + " < " + I(start) + " ? " + v + " : ";
    }
    return e;
  };
  // The selected data input's element at (o0, c, ih, iw): `as_byte` gives the raw uint8 (table index).
  auto element = [&](bool as_byte) {
    return select([&](const std::string& name, DType dt, const std::string& off) {
      return as_byte ? "(int)" + name + "[" + off + "]" : load(dt, name, off);
    });
  };
  bool bytes = true;
  for (int64_t j = 0; j < n_cat; ++j) bytes &= p.buffers.at(size_t(c.inputs[slot(j)])).dtype == DType::U8;
  const bool table = bytes && by_channel && (C * kByteValues + taps * co) * 4 <= kPackSmemBytes;
  ConvInput in;
  in.shape = xs;
  if (table) {
    in.prologue = "  // X(n, c, h, w) = opv_pack_norm(byte, c): tabulated per channel and byte value\n"
                  "  __shared__ float pack_tab[" + std::to_string(C * kByteValues) + "];\n"
                  "  for (int e = threadIdx.x; e < " + std::to_string(C * kByteValues) + "; e += blockDim.x)\n"
                  "    pack_tab[e] = opv_pack_norm((float)(e % " + std::to_string(kByteValues) + "), 0, e / " +
                  std::to_string(kByteValues) + ", 0, 0" + norm_args + ");\n";
    in.elem = "pack_tab[c * " + std::to_string(kByteValues) + " + " + element(true) + "]";
  } else {
    in.elem = "opv_pack_norm(" + element(false) + ", o0, c, ih, iw" + norm_args + ")";
  }
  // On the tensor cores (conv_mma.cpp) where that family takes the conv of an fp16 X: X computed
  // where a block stages it, the pack's post-ops on each staged element (no table: the division
  // an element made the batch-32 stem 0.188 ms against 0.083 + 0.040 apart, session 29 run 61)...
  ConvInput direct;
  direct.shape = xs;
  direct.elem = "opv_pack_norm(" + element(false) + ", o0, c, ih, iw" + norm_args + ")";
  // With X's table (fuse_pack_conv: pack_table) a staged element is a byte and a table read, and
  // where the rows are 8-byte chunks of one frame each, the chunk's 8 bytes are one load.
  if (const int64_t ts = k.attrs.i("cuda_pack_table", -1); ts >= 0) {
    if (size_t(ts) >= c.inputs.size() || c.inputs[size_t(ts)] < 0 || !bytes || axis != 1 ||
        x.in(size_t(ts)).shape != Shape{C, kByteValues} || x.in(size_t(ts)).dtype != DType::F16 || xdt != DType::F16)
      return gen.why = "pack conv: X's table out of shape", gen;
    const std::string tn = "in" + std::to_string(ts);
    direct.elem16 = tn + "[c * " + std::to_string(kByteValues) + " + " + element(true) + "]";
    bool rows8 = xs[3] % 8 == 0;
    for (int64_t j = 0; j < n_cat; ++j) rows8 &= p.buffers.at(size_t(c.inputs[slot(j)])).layout == Layout::Linear;
    std::ostringstream ch;
    ch << "    const unsigned char* row_ = "
       << select([](const std::string& name, DType, const std::string& off) { return name + " + (" + off + ")"; }) << ";\n";
    ch << "    const uint2 raw_ = ok ? *(const uint2*)row_ : make_uint2(0u, 0u);  // 8 bytes, 8-byte aligned\n"
       << "#pragma unroll\n    for (int q = 0; q < 8; ++q)\n"
       << "      hv[q] = ok ? " << tn << "[c * " << kByteValues << " + (((q < 4 ? raw_.x : raw_.y) >> ((q & 3) * 8)) & 255u)]"
       << " : (unsigned short)0;\n";
    if (rows8) direct.chunk8 = ch.str();
  }
  const bool mma = xdt == DType::F16 && conv_mma_ok(x, &direct);
  int64_t blocks = 0;
  const std::string body = mma ? conv_mma(x, &blocks, &direct) : conv_multi(x, co, &blocks, &in);

  std::string params = std::string(c_type(x.out().dtype)) + "* __restrict__ out0";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) params += input_param(x.p, c, j, c_type(x.in(j).dtype));
  gen.entry = "opv_" + k.name;
  for (char& ch : gen.entry)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  const int64_t threads = mma ? kConvMmaThreads : kMultiThreads;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/pack_conv.cpp (kernel " << k.name
      << ", the input pack computed inside the conv) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << "__device__ __forceinline__ float opv_pack_norm(float v, opv_idx o0, opv_idx o1, opv_idx o2, opv_idx o3"
      << norm_params << ") {\n  (void)o0; (void)o1; (void)o2; (void)o3;\n"
      << norm.str() << "  return " << (xdt == DType::F16 ? "opv_h2f(opv_f2h(v))" : "v") << ";  // X as stored\n}\n"
      << (mma ? kMmaHelpers : "")
      << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << gen.entry << "(" << params
      << (x.late_entry ? kEntryOpenLate : kEntryOpen);
  if (!mma)
    src << "  const opv_idx i = (opv_idx)blockIdx.x * (opv_idx)blockDim.x + (opv_idx)threadIdx.x;\n"
        << "  if (i >= " << I(blocks * threads) << ") return;\n";
  src << body << "}\n";
  gen.source = src.str();
  gen.global = {blocks * threads, 0, 0};
  gen.local = {threads, 0, 0};
  gen.smem = x.smem;
  return gen;
}

}  // namespace opv::plan::cuda::detail
