/* Chains of batched GEMVs as one launch (part of plan pass "cuda-codegen", codegen.h; compute_90+,
 * Options::cluster and Options::fuse_heads):
 *   1. fuse_heads: consecutive batched fp16 GEMV calls (batch_gemvs, codegen.cpp) of n members
 *      each, where every member of the next call reads, as its A, the output of one member of
 *      this call that nothing else reads (a bijection), become one call (cuda_abi.h "GEMV
 *      chains"): n chains of L layers. The output heads of a vision network (openpilot's and the
 *      fixture's: 14 MLPs of 512 -> 256 -> 128 -> a few outputs) are such chains: L launches of a
 *      few microseconds, each a short dot product per warp, become one.
 *   2. heads: that call's kernel (the comment above kHeadsCluster describes it).
 * Invariant: every output is the batched launches' bit for bit: each row's dot product is summed
 * by the same lanes in the same order (lane l takes K-chunks l, l + 32, ... of 8 elements, then
 * the warp's butterfly sum), and each layer's vector is rounded to fp16 as its stored tensor was.
 */
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "target/c_expr.h"
#include "target/cuda/codegen_internal.h"

namespace opv::plan::cuda::detail {

// ---- the chain kernel -------------------------------------------------------------------------
// One thread-block cluster of kHeadsCluster blocks per chain (member g = cluster index), 8 warps a
// block. Warp w of block `rank` takes rows rank * 8 + w + i * 64 (i = 0 .. R - 1) of every layer;
// lane l the K-chunks l + 32 q (q = 0 .. Q - 1) of 8 elements each, as the batched GEMV does.
// Every layer's weight rows and biases are loaded into registers at the kernel's start (they do
// not depend on the data), so the chain has one round trip to memory, then per layer: the
// layer's input (layer 0: A from global memory; then the previous layer's vector from the block's
// own shared memory), the dot products, the warp sums, and the epilogue (bias, post-ops);
// a layer's output rounded to fp16 is stored into every block of the cluster (st.shared::cluster
// into opv_h[l % 2], lane j into block j: after the butterfly every lane holds the sum), the last
// layer's into the member's output in global memory. Cluster
// barriers, split into arrive and wait: one arrive at the start and its wait before the first
// stores into peers (every block of the cluster is running), then after each layer's stores an
// arrive (release) whose wait (acquire) comes before the next layer reads its vector. Two
// vector buffers: layer l + 2 overwrites layer l's only after every block has passed layer l + 1's
// barrier, by which time every block has read layer l's vector.
constexpr int64_t kHeadsCluster = 8;      // blocks a chain (the portable cluster size)
constexpr int64_t kHeadsWarps = 8;        // warps a block
constexpr int64_t kHeadsMaxRegs = 24;     // 16-byte weight chunks a thread holds for all layers
constexpr int64_t kHeadsMaxVector = 8192;  // elements of an intermediate vector (2 x 16 KB shared)

namespace {

struct Layer {
  int64_t N = 0, K = 0, R = 0, Q = 0;
};
int64_t rows_per_warp(int64_t N) { return (N + kHeadsCluster * kHeadsWarps - 1) / (kHeadsCluster * kHeadsWarps); }
int64_t chunks_per_lane(int64_t K) { return (K + 8 * kWarp - 1) / (8 * kWarp); }

bool is_gemv_batch(const Plan& p, const Call& c) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  return k.op == OpKind::Gemm && k.source.empty() && k.attrs.i("cl_batch", 0) > 1 && !k.attrs.has("cuda_heads") &&
         !c.outputs.empty() && c.inputs.size() == 3 * c.outputs.size();
}
// The layers of member g (inputs[3g .. 3g + 2], outputs[g]) of batched call c: one row of A.
bool member_layer(const Plan& p, const Call& c, size_t g, Layer* l) {
  if (c.inputs[3 * g] < 0 || c.inputs[3 * g + 1] < 0) return false;
  const Buffer& A = p.buffers.at(size_t(c.inputs[3 * g]));
  const Buffer& B = p.buffers.at(size_t(c.inputs[3 * g + 1]));
  if (A.shape.size() != 2 || A.shape[0] != 1 || B.shape.size() != 2) return false;
  l->N = B.shape[0], l->K = B.shape[1];
  l->R = rows_per_warp(l->N), l->Q = chunks_per_lane(l->K);
  return l->K == A.shape[1] && l->K % 8 == 0 && l->N >= 1;
}

}  // namespace

void fuse_heads(Plan& p) {
  if (plan_sm(p) < 90) return;
  const std::vector<int> readers = reader_counts(p);
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size();) {
    const Call& first = p.calls[i];
    if (!is_gemv_batch(p, first)) {
      calls.push_back(p.calls[i++]);
      continue;
    }
    const size_t n = first.outputs.size();
    // chain[g] = member g's index in each layer's call, following the outputs
    std::vector<std::vector<size_t>> chain(n);
    std::vector<int64_t> regs(n, 0);
    bool ok = true;
    for (size_t g = 0; g < n && ok; ++g) {
      Layer l;
      ok = member_layer(p, first, g, &l) && l.R * l.Q <= kHeadsMaxRegs;
      chain[g].push_back(g);
      regs[g] = l.R * l.Q;
    }
    size_t L = ok ? 1 : 0;
    while (ok && i + L < p.calls.size() && is_gemv_batch(p, p.calls[i + L]) && p.calls[i + L].outputs.size() == n) {
      const Call& prev = p.calls[i + L - 1];
      const Call& next = p.calls[i + L];
      std::vector<size_t> at(n, n);
      std::vector<char> taken(n, 0);
      for (size_t g = 0; g < n; ++g) {
        const int h = prev.outputs[chain[g].back()];
        const Buffer& hb = p.buffers.at(size_t(h));
        if (hb.kind != BufferKind::Intermediate || hb.dtype != DType::F16 || readers.at(size_t(h)) != 1 ||
            numel(hb.shape) > kHeadsMaxVector)
          break;
        for (size_t m = 0; m < n; ++m)
          if (next.inputs[3 * m] == h && !taken[m]) at[g] = m;
        Layer l;
        if (at[g] == n || !member_layer(p, next, at[g], &l) || regs[g] + l.R * l.Q > kHeadsMaxRegs) {
          at[g] = n;
          break;
        }
        taken[at[g]] = 1;
      }
      if (std::find(at.begin(), at.end(), n) != at.end()) break;
      for (size_t g = 0; g < n; ++g) {
        Layer l;
        member_layer(p, next, at[g], &l);
        regs[g] += l.R * l.Q;
        chain[g].push_back(at[g]);
      }
      ++L;
    }
    if (L < 2) {
      calls.push_back(p.calls[i++]);
      continue;
    }
    Call f;
    Kernel k = p.kernels.at(size_t(first.kernel));
    k.name = "heads_" + std::to_string(n) + "x" + std::to_string(L) + "_f16";
    k.post_ops.clear();
    std::vector<int64_t> npo;
    for (size_t g = 0; g < n; ++g) {
      f.inputs.push_back(first.inputs[3 * g]);
      for (size_t l = 0; l < L; ++l) {
        const Call& c = p.calls[i + l];
        const size_t m = chain[g][l];
        f.inputs.push_back(c.inputs[3 * m + 1]);
        f.inputs.push_back(c.inputs[3 * m + 2]);
        const Kernel& lk = p.kernels.at(size_t(c.kernel));
        const std::vector<int64_t> counts = lk.attrs.ints("cuda_batch_post_ops");
        int64_t from = 0;
        for (size_t q = 0; q < m && q < counts.size(); ++q) from += counts[q];
        const int64_t cnt = m < counts.size() ? counts[m] : 0;
        for (int64_t q = from; q < from + cnt && size_t(q) < lk.post_ops.size(); ++q) k.post_ops.push_back(lk.post_ops[size_t(q)]);
        npo.push_back(cnt);
      }
      f.outputs.push_back(p.calls[i + L - 1].outputs[chain[g].back()]);
    }
    for (size_t l = 0; l < L; ++l) f.label += (l ? "+" : "") + p.calls[i + l].label;
    k.attrs.set("cl_batch", int64_t(n));
    k.attrs.set("cuda_heads", int64_t(L));
    k.attrs.set("cuda_batch_post_ops", npo);
    f.kernel = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
    calls.push_back(std::move(f));
    i += L;
  }
  p.calls = std::move(calls);
}

// A Concat along the last axis of [1, n] vectors (with or without the Cast after it, fused by
// fuse_concat_cast; no other post-ops) whose every input is a chain's output of the chains' call h
// (read by the Concat alone, maybe more than once) or the chains' common first input, into
// a float output, moves into h: the chains' last layers store into the Concat's output at their
// columns (converted as the Concat converts their fp16 outputs), block 0 copies the common input.
// Nothing between h and the Concat writes what either reads, and the Concat reads nothing h does
// not already have, so computing its output at h's place changes no value.
void fold_heads_concat(Plan& p) {
  const std::vector<int> readers = reader_counts(p);
  for (size_t i = 0; i + 1 < p.calls.size(); ++i) {
    Call& h = p.calls[i];
    const Kernel& hk = p.kernels.at(size_t(h.kernel));
    const int64_t L = hk.attrs.i("cuda_heads", 0);
    if (L < 2 || hk.attrs.has("cuda_heads_cat")) continue;
    const size_t n = h.outputs.size(), stride = size_t(1 + 2 * L);
    if (h.inputs.size() != n * stride) continue;
    const int a = h.inputs[0];
    bool common = true;
    for (size_t g = 0; g < n; ++g) common &= h.inputs[g * stride] == a;
    for (size_t j = i + 1; j < p.calls.size(); ++j) {
      const Call& c = p.calls[j];
      const Kernel& ck = p.kernels.at(size_t(c.kernel));
      bool reads = false;
      for (int b : c.inputs)
        reads |= std::find(h.outputs.begin(), h.outputs.end(), b) != h.outputs.end();
      if (!reads) continue;
      // the first call that reads a chain's output: the Concat, or nothing to fold
      if (ck.op != OpKind::Concat || !ck.post_ops.empty() || c.outputs.size() != 1) break;
      const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
      if (Y.shape.size() != 2 || Y.shape[0] != 1 || Y.layout != Layout::Linear ||
          (Y.dtype != DType::F16 && Y.dtype != DType::F32))
        break;
      const int64_t axis = ck.attrs.i("axis", 0);
      if (axis != 1 && axis != -1) break;
      std::vector<int64_t> cat;  // per Concat input: its chain, or -1 for the common input
      std::vector<int> uses(n, 0);
      int64_t cols = 0;
      bool ok = true;
      for (int b : c.inputs) {
        const auto it = b < 0 ? h.outputs.end() : std::find(h.outputs.begin(), h.outputs.end(), b);
        if (b >= 0 && it != h.outputs.end()) {
          const size_t g = size_t(it - h.outputs.begin());
          cat.push_back(int64_t(g));
          ++uses[g];
        } else if (b >= 0 && b == a && common) {
          cat.push_back(-1);
        } else {
          ok = false;
          break;
        }
        const Buffer& in = p.buffers.at(size_t(b));
        ok &= in.dtype == DType::F16 && in.shape.size() == 2 && in.shape[0] == 1 && in.layout == Layout::Linear;
        cols += ok ? in.shape[1] : 0;
      }
      for (size_t g = 0; g < n && ok; ++g) {
        const Buffer& o = p.buffers.at(size_t(h.outputs[g]));
        ok &= uses[g] > 0 && readers.at(size_t(h.outputs[g])) == uses[g] && o.kind == BufferKind::Intermediate;
      }
      if (!ok || cols != Y.shape[1]) break;
      Kernel k = hk;
      k.name = hk.name + "_cat_" + std::string(dtype_name(Y.dtype));
      k.attrs.set("cuda_heads_cat", cat);
      h.outputs = c.outputs;
      h.label += "+" + c.label;
      h.kernel = int(p.kernels.size());
      p.kernels.push_back(std::move(k));
      p.calls.erase(p.calls.begin() + std::ptrdiff_t(j));
      break;
    }
  }
}

Generated heads(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const int64_t L = k.attrs.i("cuda_heads", 0);
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  const size_t stride = size_t(1 + 2 * std::max<int64_t>(L, 0));
  // With a Concat folded in ("cuda_heads_cat": per Concat input its chain, or -1 for the common
  // input) the one output is the Concat's; each chain stores at its columns there.
  const bool folded = k.attrs.has("cuda_heads_cat");
  const std::vector<int64_t> cat = k.attrs.ints("cuda_heads_cat");
  const size_t n = folded ? c.inputs.size() / stride : c.outputs.size();
  if (L < 2 || n == 0 || c.inputs.size() != n * stride || npo.size() != n * size_t(L) || (folded && c.outputs.size() != 1))
    return gen.why = "GEMV chain call out of shape", gen;
  std::vector<std::vector<int64_t>> cols(n);  // folded: per chain its columns in the Concat's output
  std::string copy_a;                          // folded: block 0 copies the common input there
  if (folded) {
    const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
    if (Y.dtype != DType::F16 && Y.dtype != DType::F32) return gen.why = "GEMV chain Concat output", gen;
    int64_t at = 0;
    for (int64_t e : cat) {
      if (e < -1 || e >= int64_t(n)) return gen.why = "GEMV chain Concat input out of range", gen;
      if (e >= 0) {
        cols[size_t(e)].push_back(at);
        const int w = c.inputs[size_t(e) * stride + stride - 2];
        at += w < 0 ? 0 : p.buffers.at(size_t(w)).shape.at(0);
      } else {
        const Buffer& A = p.buffers.at(size_t(c.inputs.at(0)));
        copy_a += "  if (blockIdx.x == 0)  // the common input's columns\n    for (int j = (int)threadIdx.x; j < " +
                  std::to_string(numel(A.shape)) + "; j += " + std::to_string(kHeadsWarps * kWarp) + ") { const float v = " +
                  load(A.dtype, "in0", "j") + "; " + store(Y.dtype, "out0", std::to_string(at) + " + j", "v") + " }\n";
        at += numel(A.shape);
      }
    }
    if (at != numel(Y.shape)) return gen.why = "GEMV chain Concat columns", gen;
  }
  // The weight prologue (kEntryOpenLate): with every chain's weights and biases plan Constants they
  // are loaded into registers before the wait for the kernels before this one (in the source and
  // the PTX: in the sm_90 SASS ptxas schedules the wait first, so they load with the vectors,
  // session 26); the vectors (and block 0's copy of the common input, then at the end) after it.
  bool late = true;
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (j % stride != 0) late &= weight_input(p, c, j);
  int64_t hmax = 8;
  // Members whose code is the same (shapes, bias and output types, post-ops) share it: the member
  // picks its pointers (pa, pw<l>, pb<l>, py) and runs the group's code, so the kernel holds one
  // copy of each distinct chain, not n.
  std::vector<std::string> codes;            // distinct member code, in first-use order
  std::vector<std::vector<size_t>> members;  // per code: its members
  std::vector<std::string> picks(n);         // per member: its pointer assignments
  size_t po_at = 0;
  for (size_t g = 0; g < n; ++g) {
    const size_t base = g * stride;
    if (c.inputs[base] < 0) return gen.why = "GEMV chain without A", gen;
    std::vector<Layer> ls(static_cast<size_t>(L));
    int64_t regs = 0, K = p.buffers.at(size_t(c.inputs[base])).shape.back();
    const Buffer& A = p.buffers.at(size_t(c.inputs[base]));
    if (A.dtype != DType::F16 || numel(A.shape) != K) return gen.why = "GEMV chain member " + std::to_string(g) + ": A is not one fp16 row", gen;
    std::ostringstream decl, pick, body;
    decl << "    const unsigned short* pa;\n";
    pick << "pa = in" << base << "; ";
    for (size_t l = 0; l < size_t(L); ++l) {
      const int w = c.inputs[base + 1 + 2 * l];
      if (w < 0) return gen.why = "GEMV chain without B", gen;
      const Buffer& B = p.buffers.at(size_t(w));
      if (B.dtype != DType::F16 || B.shape.size() != 2 || B.shape[1] != K || K % 8 != 0 || B.shape[0] < 1)
        return gen.why = "GEMV chain member " + std::to_string(g) + " layer " + std::to_string(l) + ": B is not fp16 [N, K]", gen;
      const int bias = c.inputs[base + 2 + 2 * l];
      if (bias >= 0 && (!is_float(p.buffers.at(size_t(bias)).dtype) || numel(p.buffers.at(size_t(bias)).shape) != B.shape[0]))
        return gen.why = "GEMV chain bias", gen;
      decl << "    const unsigned short* pw" << l << ";\n";
      pick << "pw" << l << " = in" << base + 1 + 2 * l << "; ";
      if (bias >= 0) {
        decl << "    const " << c_type(p.buffers.at(size_t(bias)).dtype) << "* pb" << l << ";\n";
        pick << "pb" << l << " = in" << base + 2 + 2 * l << "; ";
      }
      ls[l] = {B.shape[0], K, rows_per_warp(B.shape[0]), chunks_per_lane(K)};
      regs += ls[l].R * ls[l].Q;
      if (l + 1 < size_t(L)) hmax = std::max(hmax, (ls[l].N + 7) / 8 * 8);
      K = B.shape[0];
    }
    const Buffer& Y = p.buffers.at(size_t(c.outputs[folded ? 0 : g]));
    if (!is_float(Y.dtype) || (!folded && numel(Y.shape) != ls.back().N) || (folded && cols[g].empty()))
      return gen.why = "GEMV chain output", gen;
    if (regs > kHeadsMaxRegs || hmax > kHeadsMaxVector) return gen.why = "GEMV chain too wide for registers", gen;
    decl << "    " << c_type(Y.dtype) << "* py;\n";
    pick << "py = out" << (folded ? 0 : g) << ";";
    for (size_t u = 0; u < cols[g].size(); ++u) {
      decl << "    int pc" << u << ";\n";
      pick << " pc" << u << " = " << cols[g][u] << ";";
    }
    // every layer's weight rows and biases first
    for (size_t l = 0; l < size_t(L); ++l) {
      const Layer& y = ls[l];
      const int bias = c.inputs[base + 2 + 2 * l];
      body << "    opv_u4 w" << l << "[" << y.R << "][" << y.Q << "];\n    float b" << l << "[" << y.R << "];\n"
           << "#pragma unroll\n    for (int i = 0; i < " << y.R << "; ++i) {\n"
           << "      const int row = row0 + i * " << kHeadsCluster * kHeadsWarps << ";\n"
           << "#pragma unroll\n      for (int q = 0; q < " << y.Q << "; ++q) {\n"
           << "        const int kk = lane * 8 + q * " << 8 * kWarp << ";\n"
           << "        w" << l << "[i][q] = row < " << y.N << " && kk < " << y.K << " ? *(const opv_u4*)(pw" << l
           << " + row * " << y.K << " + kk) : opv_u4{0u, 0u, 0u, 0u};\n"
           << "      }\n"
           << "      b" << l << "[i] = "
           << (bias >= 0 ? "row < " + std::to_string(y.N) + " ? " + load(p.buffers.at(size_t(bias)).dtype, "pb" + std::to_string(l), "row") + " : 0.0f"
                         : std::string("0.0f"))
           << ";\n    }\n";
    }
    for (size_t l = 0; l < size_t(L); ++l) {
      const Layer& y = ls[l];
      const bool last = l + 1 == size_t(L);
      if (l == 0 && late) body << "    OPV_KERNEL_ENTRY();  // the registers above hold weights: no kernel writes them\n";
      body << "    {  // layer " << l << ": " << y.N << " x " << y.K << "\n";
      if (l > 0) body << "      opv_cluster_wait();  // layer " << l - 1 << "'s vector in every block\n";
      body << "      opv_u4 x[" << y.Q << "];\n"
           << "#pragma unroll\n      for (int q = 0; q < " << y.Q << "; ++q) {\n"
           << "        const int kk = lane * 8 + q * " << 8 * kWarp << ";\n"
           << "        x[q] = kk < " << y.K << " ? *(const opv_u4*)("
           << (l == 0 ? std::string("pa + kk") : "&opv_h[" + std::to_string((l - 1) % 2) + "][kk]")
           << ") : opv_u4{0u, 0u, 0u, 0u};\n      }\n"
           << "      float acc[" << y.R << "];\n"
           << "#pragma unroll\n      for (int i = 0; i < " << y.R << "; ++i) {\n"
           << "        acc[i] = 0.0f;\n"
           << "#pragma unroll\n        for (int q = 0; q < " << y.Q << "; ++q)\n"
           << "          if (lane * 8 + q * " << 8 * kWarp << " < " << y.K << ") acc[i] = opv_dot8(x[q], w" << l
           << "[i][q], acc[i]);\n"
           << "        acc[i] = opv_warp_sum(acc[i]);\n      }\n";
      if (l == 0) body << "      opv_cluster_wait();  // every block of the cluster is running\n";
      body << "#pragma unroll\n      for (int i = 0; i < " << y.R << "; ++i) {\n"
           << "        const int row = row0 + i * " << kHeadsCluster * kHeadsWarps << ";\n"
           << "        if (lane < " << (last ? 1 : kHeadsCluster) << " && row < " << y.N << ") {\n"
           << "          float v = acc[i]" << (c.inputs[base + 2 + 2 * l] >= 0 ? " + b" + std::to_string(l) + "[i]" : std::string()) << ";\n";
      for (int64_t q = 0; q < npo.at(g * size_t(L) + l); ++q, ++po_at) {
        if (po_at >= k.post_ops.size() || k.post_ops[po_at].input >= 0) return gen.why = "GEMV chain post-ops", gen;
        const std::string e = unary_expr(k.post_ops[po_at], "v");
        if (e.empty()) return gen.why = "GEMV chain post-ops", gen;
        body << "          v = " << e << ";\n";
      }
      if (last) {
        if (!folded) body << "          " << store(Y.dtype, "py", "row", "v") << "\n";
        // folded: the value the Concat reads, the chain's fp16 output, converted
        for (size_t u = 0; u < cols[g].size(); ++u)
          body << "          " << store(Y.dtype, "py", "pc" + std::to_string(u) + " + row", "opv_h2f(opv_f2h(v))") << "\n";
      } else {
        // every lane holds the warp's sum (a butterfly): lane j stores it into block j
        body << "          opv_st_cluster2(opv_cluster_addr(&opv_h[" << l % 2 << "][row], (unsigned)lane), opv_f2h(v));\n";
      }
      body << "        }\n      }\n";
      if (!last) body << "      opv_cluster_arrive();  // this block's rows of layer " << l << " stored\n";
      body << "    }\n";
    }
    const std::string code = decl.str() + body.str();
    const size_t at = size_t(std::find(codes.begin(), codes.end(), code) - codes.begin());
    if (at == codes.size()) codes.push_back(code), members.emplace_back();
    members[at].push_back(g);
    picks[g] = pick.str();
  }
  std::ostringstream body;
  for (size_t a = 0; a < codes.size(); ++a) {
    body << "  " << (a ? "} else " : "") << "if (";
    for (size_t j = 0; j < members[a].size(); ++j) body << (j ? " || " : "") << "g == " << members[a][j];
    body << ") {\n" << codes[a].substr(0, codes[a].find("    opv_u4 w0")) << "    switch (g) {\n";
    for (size_t g : members[a]) body << "      case " << g << ": " << picks[g] << " break;\n";
    body << "      default: " << picks[members[a][0]] << " break;\n    }\n" << codes[a].substr(codes[a].find("    opv_u4 w0"));
  }
  body << "  }\n";
  if (po_at != k.post_ops.size()) return gen.why = "GEMV chain post-op counts", gen;
  std::string params;
  for (size_t g = 0; g < c.outputs.size(); ++g)
    params += std::string(g ? ", " : "") + c_type(p.buffers.at(size_t(c.outputs[g])).dtype) + "* __restrict__ out" + std::to_string(g);
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0)
      params += input_param(p, c, j, c_type(p.buffers.at(size_t(c.inputs[j])).dtype));
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/heads.cpp (kernel " << k.name << ", " << n << " chains of " << L
      << " GEMVs, a thread-block cluster each) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n" << kDot8 << kMmaHelpers << kClusterHelpers
      << "extern \"C\" __global__ void __cluster_dims__(" << kHeadsCluster << ", 1, 1) __launch_bounds__("
      << kHeadsWarps * kWarp << ") " << gen.entry << "(" << params << (late ? kEntryOpenLate : kEntryOpen)
      << "  __shared__ __align__(16) unsigned short opv_h[2][" << hmax << "];  // the layers' vectors, alternately\n"
      << "  const int g = (int)(blockIdx.x / " << kHeadsCluster << ");  // the chain: one cluster each\n"
      << "  const int rank = (int)(blockIdx.x % " << kHeadsCluster << "), lane = (int)(threadIdx.x % " << kWarp
      << ");\n"
      << "  const int row0 = rank * " << kHeadsWarps << " + (int)(threadIdx.x / " << kWarp << ");\n"
      << "  asm volatile(\"barrier.cluster.arrive.relaxed.aligned;\" ::: \"memory\");  // waited on before the first stores into peers\n"
      << (late ? "" : copy_a) << body.str() << (late ? copy_a : "") << "}\n";
  gen.source = src.str();
  gen.global = {int64_t(n) * kHeadsCluster * kHeadsWarps * kWarp, 0, 0};
  gen.local = {kHeadsWarps * kWarp, 0, 0};
  return gen;
}

}  // namespace opv::plan::cuda::detail
