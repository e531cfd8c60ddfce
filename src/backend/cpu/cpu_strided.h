// The strided loop-nest engine of the cpu backend's glue loops. An element-wise op over K
// operands (operand 0 is the output) is described by the output's logical shape and, per
// operand, one element stride per logical dim (0 for a broadcast dim). At load the nest is
// simplified: dims are ordered by the output's storage order, size-1 dims dropped and adjacent
// dims merged where every operand is contiguous across them, so row-major, NHWC, broadcast,
// transposed and sliced views all run as a few long inner rows. At run the rows are split
// into tiles over OpenMP threads; the op's row function sees base pointers and inner strides.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace opv::backend::cpu {

struct LoopNest {
  int nops = 0;
  std::vector<int64_t> dims;                  // outer..inner, after simplification
  std::vector<std::vector<int64_t>> strides;  // [operand][dim], in elements
  std::vector<int64_t> elem_size;             // bytes per element of each operand
  int64_t total = 0;
  int threads = 1;
};

// Builds a simplified nest. strides[k] has one entry per dim of `shape`.
inline LoopNest make_nest(const std::vector<int64_t>& shape, std::vector<std::vector<int64_t>> strides,
                          std::vector<int64_t> elem_size, int threads) {
  LoopNest n;
  n.nops = int(strides.size());
  n.elem_size = std::move(elem_size);
  n.threads = std::max(1, threads);
  n.total = 1;
  for (int64_t d : shape) n.total *= d;
  const size_t rank = shape.size();
  for (const std::vector<int64_t>& s : strides)  // every operand's strides span the iteration's dims
    OPV_CHECK(s.size() == rank, "cpu backend: a strided loop over ", rank, " dims got an operand with ", s.size(),
              " strides");
  // Order dims by the output's stride, largest first (stable: ties keep logical order).
  std::vector<size_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return strides[0][a] > strides[0][b]; });
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(strides.size());
  for (size_t d : order) {
    if (shape[d] == 1) continue;
    dims.push_back(shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
  }
  // Merge dim i into dim i+1 when contiguous for every operand.
  std::vector<int64_t> md;
  std::vector<std::vector<int64_t>> ms(strides.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!md.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < st.size(); ++k)
        if (ms[k].back() != st[k][i] * dims[i]) mergeable = false;
      if (mergeable) {
        md.back() *= dims[i];
        for (size_t k = 0; k < st.size(); ++k) ms[k].back() = st[k][i];
        continue;
      }
    }
    md.push_back(dims[i]);
    for (size_t k = 0; k < st.size(); ++k) ms[k].push_back(st[k][i]);
  }
  if (md.empty()) {  // a single element
    md.push_back(1);
    for (auto& s : ms) s.push_back(0);
  }
  n.dims = std::move(md);
  n.strides = std::move(ms);
  return n;
}

// Work below this many elements runs on one thread.
constexpr int64_t kParallelMinElems = 1 << 15;

// Runs row(n, ptrs, inner_strides) over the nest; ptrs are byte pointers of each operand at
// the row start, inner_strides the element strides of the innermost dim.
template <typename RowFn>
void run_nest(const LoopNest& n, const std::vector<char*>& base, RowFn&& row) {
  if (n.total == 0) return;
  const size_t nd = n.dims.size();
  const int64_t inner = n.dims[nd - 1];
  const int64_t rows = n.total / inner;
  const int nt = n.total >= kParallelMinElems ? n.threads : 1;
  // Split the inner dim into chunks when there are too few rows to share.
  int64_t chunk = inner;
  if (nt > 1 && rows < 4 * nt) {
    int64_t pieces = (4 * nt + rows - 1) / rows;
    chunk = std::max<int64_t>(64, (inner + pieces - 1) / pieces);
  }
  const int64_t nchunks = (inner + chunk - 1) / chunk;
  const int64_t tiles = rows * nchunks;
  const int nops = n.nops;
  int64_t inner_st[8];
  OPV_ASSERT(nops <= 8);
  for (int k = 0; k < nops; ++k) inner_st[k] = n.strides[k][nd - 1];
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t r = t / nchunks, c0 = (t % nchunks) * chunk;
    char* p[8];
    for (int k = 0; k < nops; ++k) p[k] = base[size_t(k)];
    for (size_t d = nd - 1; d-- > 0;) {
      int64_t i = r % n.dims[d];
      r /= n.dims[d];
      for (int k = 0; k < nops; ++k) p[k] += i * n.strides[k][d] * n.elem_size[size_t(k)];
    }
    for (int k = 0; k < nops; ++k) p[k] += c0 * inner_st[k] * n.elem_size[size_t(k)];
    row(std::min(chunk, inner - c0), p, inner_st);
  }
}

}  // namespace opv::backend::cpu
