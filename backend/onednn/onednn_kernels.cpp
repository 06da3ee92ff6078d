// backend/onednn/onednn_kernels.cpp - plain-loop kernels of the oneDNN executor.
#include "backend/onednn/onednn_kernels.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ir/bf16.h"
#include "ir/check.h"

namespace txl::backend::kernels {

namespace {

// Calls body(offsets...) for every index of `shape` (row-major order), with
// the element offset of each operand given its strides. The innermost
// dimension is a plain loop.
template <std::size_t N, typename Body>
void forEachIndex(const ir::Shape& shape, const std::int64_t* const (&strides)[N], Body body) {
  const std::size_t rank = shape.size();
  for (auto d : shape)
    if (d == 0) return;
  if (rank == 0) {
    std::int64_t offs[N] = {};
    body(offs, std::int64_t{1}, strides);
    return;
  }
  std::vector<std::int64_t> idx(rank, 0);
  std::int64_t offs[N] = {};
  const std::int64_t inner = shape[rank - 1];
  while (true) {
    body(offs, inner, strides);
    // Advance the outer index (all but the last dimension).
    std::size_t d = rank - 1;
    while (d > 0) {
      --d;
      ++idx[d];
      for (std::size_t k = 0; k < N; ++k) offs[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (std::size_t k = 0; k < N; ++k) offs[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace

void posEncoding(float* out, std::int64_t klen, std::int64_t d, std::int64_t clampLen) {
  const std::int64_t half = d / 2;
  std::vector<double> invFreq(half);
  for (std::int64_t k = 0; k < half; ++k) invFreq[k] = 1.0 / std::pow(10000.0, double(2 * k) / double(d));
  for (std::int64_t m = 0; m < klen; ++m) {
    double pos = double(klen - 1 - m);
    if (clampLen > 0 && pos > double(clampLen)) pos = double(clampLen);
    float* row = out + m * d;
    for (std::int64_t k = 0; k < half; ++k) {
      row[k] = static_cast<float>(std::sin(pos * invFreq[k]));
      row[half + k] = static_cast<float>(std::cos(pos * invFreq[k]));
    }
  }
}

void attnMask(float* out, std::int64_t qlen, std::int64_t mlen, std::int64_t memLen, bool sameLength) {
  const std::int64_t klen = mlen + qlen;
  const std::int64_t maskLen = klen - memLen;
  const std::int64_t shift = maskLen > 0 ? qlen - maskLen : qlen;
  for (std::int64_t i = 0; i < qlen; ++i)
    for (std::int64_t j = 0; j < klen; ++j) {
      bool masked = j > mlen + i;
      if (sameLength && j <= i - shift) masked = true;
      out[i * klen + j] = masked ? 1.0f : 0.0f;
    }
}

void fill(void* out, ir::DType dtype, std::int64_t n, double value) {
  switch (dtype) {
    case ir::DType::F32:
      for (std::int64_t i = 0; i < n; ++i) static_cast<float*>(out)[i] = static_cast<float>(value);
      return;
    case ir::DType::BF16: {
      std::uint16_t v = ir::floatToBf16(static_cast<float>(value));
      for (std::int64_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(out)[i] = v;
      return;
    }
    case ir::DType::I64:
      for (std::int64_t i = 0; i < n; ++i) static_cast<std::int64_t*>(out)[i] = static_cast<std::int64_t>(value);
      return;
  }
}

void embedding(const float* table, std::int64_t rows, std::int64_t dim, const std::int64_t* ids, std::int64_t n,
               std::int64_t lo, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = ids[i] - lo;
    if (ids[i] >= lo && r < rows) std::memcpy(out + i * dim, table + r * dim, sizeof(float) * dim);
    else std::memset(out + i * dim, 0, sizeof(float) * dim);
  }
}

void maskedFill(const float* x, const ir::Shape& shape, const void* mask, ir::DType maskDType,
                const std::int64_t* maskStrides, float value, float* out) {
  std::vector<std::int64_t> dense(shape.size());
  std::int64_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    dense[d] = s;
    s *= shape[d];
  }
  const std::int64_t* strides[2] = {dense.data(), maskStrides};
  const bool i64 = maskDType == ir::DType::I64;
  TXL_CHECK(i64 || maskDType == ir::DType::F32, "masked_fill: mask must be f32 or i64");
  const std::int64_t innerMask = shape.empty() ? 0 : maskStrides[shape.size() - 1];
  forEachIndex<2>(shape, strides, [&](const std::int64_t* offs, std::int64_t inner, auto&) {
    const float* xs = x + offs[0];
    float* o = out + offs[0];
    if (i64) {
      const std::int64_t* m = static_cast<const std::int64_t*>(mask) + offs[1];
      for (std::int64_t i = 0; i < inner; ++i) o[i] = m[i * innerMask] != 0 ? value : xs[i];
    } else {
      const float* m = static_cast<const float*>(mask) + offs[1];
      for (std::int64_t i = 0; i < inner; ++i) o[i] = m[i * innerMask] != 0.0f ? value : xs[i];
    }
  });
}

void pick(const float* x, std::int64_t outer, std::int64_t n, const std::int64_t* idx, float* out) {
  for (std::int64_t o = 0; o < outer; ++o) {
    if (idx[o] < 0 || idx[o] >= n)
      throw Error("pick: index " + std::to_string(idx[o]) + " at position " + std::to_string(o) + " is outside [0, " +
                  std::to_string(n) + ")");
    out[o] = x[o * n + idx[o]];
  }
}

void relShift(const float* x, std::int64_t outer, std::int64_t q, std::int64_t k, float* out) {
  // Flat index f of the padded [q, k+1] matrix holds 0 in column 0 and
  // x[f / (k+1), f % (k+1) - 1] elsewhere; y[i, j] = padded_flat[q + i*k + j].
  for (std::int64_t o = 0; o < outer; ++o) {
    const float* xs = x + o * q * k;
    float* ys = out + o * q * k;
    for (std::int64_t i = 0; i < q; ++i) {
      std::int64_t f = q + i * k;
      std::int64_t row = f / (k + 1), col = f % (k + 1);
      for (std::int64_t j = 0; j < k; ++j) {
        ys[i * k + j] = col == 0 ? 0.0f : xs[row * k + col - 1];
        if (++col == k + 1) {
          col = 0;
          ++row;
        }
      }
    }
  }
}

void stridedCopy(const void* src, const std::int64_t* srcStrides, void* dst, const std::int64_t* dstStrides,
                 const ir::Shape& shape, std::size_t elemSize) {
  const std::int64_t* strides[2] = {srcStrides, dstStrides};
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  const std::int64_t ss = shape.empty() ? 0 : srcStrides[shape.size() - 1];
  const std::int64_t ds = shape.empty() ? 0 : dstStrides[shape.size() - 1];
  forEachIndex<2>(shape, strides, [&](const std::int64_t* offs, std::int64_t inner, auto&) {
    const char* sp = s + offs[0] * std::int64_t(elemSize);
    char* dp = d + offs[1] * std::int64_t(elemSize);
    if (ss == 1 && ds == 1) {
      std::memcpy(dp, sp, inner * elemSize);
      return;
    }
    for (std::int64_t i = 0; i < inner; ++i)
      std::memcpy(dp + i * ds * std::int64_t(elemSize), sp + i * ss * std::int64_t(elemSize), elemSize);
  });
}

void binaryI64(const std::int64_t* a, const std::int64_t* aStrides, const std::int64_t* b, const std::int64_t* bStrides,
               std::int64_t* out, const ir::Shape& shape, int op) {
  std::vector<std::int64_t> dense(shape.size());
  std::int64_t n = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    dense[d] = n;
    n *= shape[d];
  }
  const std::int64_t* strides[3] = {aStrides, bStrides, dense.data()};
  const std::int64_t as = shape.empty() ? 0 : aStrides[shape.size() - 1];
  const std::int64_t bs = shape.empty() ? 0 : bStrides[shape.size() - 1];
  forEachIndex<3>(shape, strides, [&](const std::int64_t* offs, std::int64_t inner, auto&) {
    const std::int64_t* x = a + offs[0];
    const std::int64_t* y = b + offs[1];
    std::int64_t* o = out + offs[2];
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t u = x[i * as], v = y[i * bs];
      o[i] = op == 0 ? u + v : op == 1 ? u - v : u * v;
    }
  });
}

void padFill(void* out, ir::DType dtype, std::int64_t outer, std::int64_t before, std::int64_t mid, std::int64_t after,
             std::int64_t inner, double value) {
  const std::size_t es = ir::dtypeSize(dtype);
  const std::int64_t rowElems = (before + mid + after) * inner;
  for (std::int64_t o = 0; o < outer; ++o) {
    char* row = static_cast<char*>(out) + o * rowElems * std::int64_t(es);
    if (before > 0) fill(row, dtype, before * inner, value);
    if (after > 0) fill(row + (before + mid) * inner * std::int64_t(es), dtype, after * inner, value);
  }
}

}  // namespace txl::backend::kernels
