// backend/reference/reference_kernels.cpp - the reference kernels: plain loops, one per op.
//
// Index math is shared: a flat index of the result is turned into an offset in
// an operand through per-dimension strides (0 along broadcast dimensions), and
// axis ops view a tensor as [outer, n, inner] around their axis. Float kernels
// compute in f32 (accumulating in double); a bf16 operand is widened to f32
// first and a bf16 result rounded at the end.
#include "backend/reference/reference_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/check.h"
#include "ir/shape_inference.h"

namespace txl::backend::ref {

using ir::DType;

namespace {

// --- dtype handling ---------------------------------------------------------

[[noreturn]] void unsupported(const char* op, const Tensor& t, const char* expected) {
  throw Error(std::string(op) + ": unsupported operand " + t.type().str() + " (expected " + expected + ")");
}

// The tensor as f32: itself, or a widened copy of a bf16 tensor.
Tensor toF32(const Tensor& t, const char* op) {
  switch (t.dtype()) {
    case DType::F32:
      return t;
    case DType::BF16: {
      Tensor out = Tensor::zeros({DType::F32, t.shape()});
      for (std::int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = bf16ToFloat(t.data<std::uint16_t>()[i]);
      return out;
    }
    case DType::I64:
      break;
  }
  unsupported(op, t, "f32 or bf16");
}

// An f32 result in the dtype the op produces (f32 or bf16).
Tensor fromF32(const Tensor& t, DType dtype) {
  if (dtype == DType::F32) return t;
  TXL_CHECK(dtype == DType::BF16, "float result requested as " + std::string(ir::dtypeName(dtype)));
  Tensor out = Tensor::zeros({DType::BF16, t.shape()});
  for (std::int64_t i = 0; i < t.numel(); ++i) out.data<std::uint16_t>()[i] = floatToBf16(t.data<float>()[i]);
  return out;
}

void fill(Tensor& t, double value) {
  switch (t.dtype()) {
    case DType::F32:
      std::fill_n(t.data<float>(), t.numel(), float(value));
      return;
    case DType::BF16:
      std::fill_n(t.data<std::uint16_t>(), t.numel(), floatToBf16(float(value)));
      return;
    case DType::I64:
      if (!std::isfinite(value) || value != std::trunc(value))
        throw Error("cannot fill an i64 tensor with " + std::to_string(value));
      std::fill_n(t.data<std::int64_t>(), t.numel(), std::int64_t(value));
      return;
  }
}

bool isNonzero(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::F32:
      return t.data<float>()[i] != 0.0f;
    case DType::BF16:
      return (t.data<std::uint16_t>()[i] & 0x7fff) != 0;  // +0 and -0 are zero
    case DType::I64:
      return t.data<std::int64_t>()[i] != 0;
  }
  return false;
}

std::size_t elemSize(const Tensor& t) { return ir::dtypeSize(t.dtype()); }

// --- index math -------------------------------------------------------------

std::vector<std::int64_t> contiguousStrides(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

// Strides for reading a contiguous `operand` at an index of `out`: aligned to
// out's trailing dimensions, 0 along dimensions the operand broadcasts.
std::vector<std::int64_t> broadcastStrides(const Shape& operand, const Shape& out) {
  TXL_CHECK(operand.size() <= out.size(), "cannot broadcast " + ir::shapeStr(operand) + " to " + ir::shapeStr(out));
  std::vector<std::int64_t> own = contiguousStrides(operand);
  std::vector<std::int64_t> strides(out.size(), 0);
  std::size_t lead = out.size() - operand.size();
  for (std::size_t d = 0; d < operand.size(); ++d) {
    TXL_CHECK(operand[d] == out[lead + d] || operand[d] == 1,
              "cannot broadcast " + ir::shapeStr(operand) + " to " + ir::shapeStr(out));
    strides[lead + d] = operand[d] == 1 ? 0 : own[d];
  }
  return strides;
}

// The offset, under `strides`, of flat element `index` of a tensor of `shape`.
std::int64_t offsetOf(std::int64_t index, const Shape& shape, const std::vector<std::int64_t>& strides) {
  std::int64_t offset = 0;
  for (std::size_t d = shape.size(); d-- > 0;) {
    offset += (index % shape[d]) * strides[d];
    index /= shape[d];
  }
  return offset;
}

// The number of rows of a tensor of `shape`: the product of all but its last dimension.
std::int64_t leadingCount(const Shape& shape) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d) n *= shape[d];
  return n;
}

// A tensor seen as [outer, n, inner] around one axis.
struct AxisView {
  std::int64_t outer = 1, n = 1, inner = 1;
};
AxisView aroundAxis(const Shape& shape, std::int64_t axis) {
  AxisView v;
  for (std::int64_t d = 0; d < std::int64_t(shape.size()); ++d) {
    if (d < axis) v.outer *= shape[d];
    else if (d == axis) v.n = shape[d];
    else v.inner *= shape[d];
  }
  return v;
}

std::int64_t checkedAxis(std::int64_t axis, const Tensor& x, const char* op) {
  auto a = ir::normalizeAxis(axis, x.type().rank());
  TXL_CHECK(a.has_value(), std::string(op) + ": axis " + std::to_string(axis) + " out of range for " + x.type().str());
  return *a;
}

// --- shared kernel bodies ---------------------------------------------------

template <typename T, typename Fn>
void binaryLoop(const Tensor& a, const Tensor& b, Tensor& out, Fn fn) {
  auto sa = broadcastStrides(a.shape(), out.shape());
  auto sb = broadcastStrides(b.shape(), out.shape());
  for (std::int64_t i = 0; i < out.numel(); ++i)
    out.data<T>()[i] = fn(a.data<T>()[offsetOf(i, out.shape(), sa)], b.data<T>()[offsetOf(i, out.shape(), sb)]);
}

template <typename Fn>
Tensor binary(const Tensor& a, const Tensor& b, const char* op, Fn fn) {
  if (a.dtype() != b.dtype())
    throw Error(std::string(op) + ": operand dtypes differ: " + a.type().str() + " vs " + b.type().str());
  auto shape = ir::broadcastShapes(a.shape(), b.shape());
  TXL_CHECK(shape.has_value(),
            std::string(op) + ": " + a.type().str() + " and " + b.type().str() + " do not broadcast");
  switch (a.dtype()) {
    case DType::F32:
    case DType::BF16: {
      Tensor out = Tensor::zeros({DType::F32, *shape});
      binaryLoop<float>(toF32(a, op), toF32(b, op), out, fn);
      return fromF32(out, a.dtype());
    }
    case DType::I64: {
      Tensor out = Tensor::zeros({DType::I64, *shape});
      binaryLoop<std::int64_t>(a, b, out, fn);
      return out;
    }
  }
  unsupported(op, a, "f32, bf16 or i64");
}

template <typename Fn>
Tensor unary(const Tensor& x, const char* op, Fn fn) {
  Tensor in = toF32(x, op);
  Tensor out = Tensor::zeros({DType::F32, x.shape()});
  for (std::int64_t i = 0; i < x.numel(); ++i) out.data<float>()[i] = fn(in.data<float>()[i]);
  return fromF32(out, x.dtype());
}

// softmax (log = false) or log_softmax over `axis`, max-subtracted.
Tensor softmaxImpl(const Tensor& x, std::int64_t axis, bool log, const char* op) {
  Tensor in = toF32(x, op);
  Tensor out = Tensor::zeros({DType::F32, x.shape()});
  AxisView v = aroundAxis(x.shape(), checkedAxis(axis, x, op));
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t i = 0; i < v.inner; ++i) {
      std::int64_t base = o * v.n * v.inner + i;
      auto at = [&](std::int64_t j) { return base + j * v.inner; };
      double max = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < v.n; ++j) max = std::max(max, double(src[at(j)]));
      // All -inf: max - max is NaN, so the whole slice becomes NaN, as in PyTorch.
      double sum = 0.0;
      for (std::int64_t j = 0; j < v.n; ++j) sum += std::exp(double(src[at(j)]) - max);
      for (std::int64_t j = 0; j < v.n; ++j) {
        double shifted = double(src[at(j)]) - max;
        dst[at(j)] = float(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  return fromF32(out, x.dtype());
}

}  // namespace

// --- Sources ----------------------------------------------------------------

Tensor constant(const TensorType& type, double value) {
  Tensor out = Tensor::zeros(type);
  fill(out, value);
  return out;
}

Tensor posEncoding(std::int64_t klen, std::int64_t d, std::int64_t clampLen) {
  TXL_CHECK(d > 0 && d % 2 == 0, "pos_encoding needs an even d, got " + std::to_string(d));
  Tensor out = Tensor::zeros({DType::F32, {klen, d}});
  std::int64_t half = d / 2;
  for (std::int64_t m = 0; m < klen; ++m) {
    double pos = double(klen - 1 - m);
    if (clampLen > 0) pos = std::min(pos, double(clampLen));
    float* row = out.data<float>() + m * d;
    for (std::int64_t k = 0; k < half; ++k) {
      double invFreq = 1.0 / std::pow(10000.0, double(2 * k) / double(d));
      row[k] = float(std::sin(pos * invFreq));
      row[half + k] = float(std::cos(pos * invFreq));
    }
  }
  return out;
}

Tensor attnMask(std::int64_t qlen, std::int64_t mlen, std::int64_t memLen, bool sameLength) {
  std::int64_t klen = mlen + qlen;
  std::int64_t visible = klen - memLen;                      // L
  std::int64_t shift = visible > 0 ? qlen - visible : qlen;  // t
  Tensor out = Tensor::zeros({DType::F32, {qlen, klen}});
  for (std::int64_t i = 0; i < qlen; ++i)
    for (std::int64_t j = 0; j < klen; ++j) {
      bool future = j > mlen + i;
      bool tooOld = sameLength && j <= i - shift;
      out.data<float>()[i * klen + j] = future || tooOld ? 1.0f : 0.0f;
    }
  return out;
}

// --- Elementwise and shape --------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(a, b, "add", [](auto x, auto y) { return x + y; });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(a, b, "sub", [](auto x, auto y) { return x - y; });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(a, b, "mul", [](auto x, auto y) { return x * y; });
}

Tensor scale(const Tensor& x, double factor) {
  return unary(x, "scale", [factor](float v) { return float(double(v) * factor); });
}

Tensor relu(const Tensor& x) {
  return unary(x, "relu", [](float v) { return v > 0.0f || std::isnan(v) ? v : 0.0f; });
}

Tensor maskedFill(const Tensor& x, const Tensor& mask, double value) {
  Tensor in = toF32(x, "masked_fill");
  Tensor out = in.clone();
  auto strides = broadcastStrides(mask.shape(), x.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i)
    if (isNonzero(mask, offsetOf(i, x.shape(), strides))) out.data<float>()[i] = float(value);
  return fromF32(out, x.dtype());
}

Tensor concat(const std::vector<Tensor>& xs, std::int64_t axis) {
  TXL_CHECK(!xs.empty(), "concat of nothing");
  axis = checkedAxis(axis, xs[0], "concat");
  Shape shape = xs[0].shape();
  shape[axis] = 0;
  for (const Tensor& x : xs) {
    if (x.dtype() != xs[0].dtype())
      throw Error("concat: operand dtypes differ: " + x.type().str() + " vs " + xs[0].type().str());
    shape[axis] += x.shape()[axis];
  }
  Tensor out = Tensor::zeros({xs[0].dtype(), shape});
  std::int64_t outer = aroundAxis(shape, axis).outer;
  if (out.numel() == 0) return out;
  char* dst = static_cast<char*>(out.raw());
  for (std::int64_t o = 0; o < outer; ++o)
    for (const Tensor& x : xs) {
      std::size_t chunk = x.bytes() / std::size_t(outer);  // x[o, :, ...] is contiguous
      std::memcpy(dst, static_cast<const char*>(x.raw()) + o * chunk, chunk);
      dst += chunk;
    }
  return out;
}

Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end) {
  axis = checkedAxis(axis, x, "slice");
  TXL_CHECK(0 <= start && start <= end && end <= x.shape()[axis], "slice range out of bounds of " + x.type().str());
  Shape shape = x.shape();
  shape[axis] = end - start;
  Tensor out = Tensor::zeros({x.dtype(), shape});
  AxisView v = aroundAxis(x.shape(), axis);
  std::size_t row = std::size_t(v.inner) * elemSize(x);  // bytes of one step along the axis
  for (std::int64_t o = 0; o < v.outer; ++o)
    std::memcpy(static_cast<char*>(out.raw()) + o * (end - start) * row,
                static_cast<const char*>(x.raw()) + (o * v.n + start) * row, (end - start) * row);
  return out;
}

Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshaped(shape); }

Tensor permute(const Tensor& x, const std::vector<std::int64_t>& perm) {
  TXL_CHECK(std::int64_t(perm.size()) == x.type().rank(), "permute: perm does not match " + x.type().str());
  Shape shape(perm.size());
  std::vector<std::int64_t> inStrides = contiguousStrides(x.shape()), strides(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) {
    shape[d] = x.shape()[perm[d]];
    strides[d] = inStrides[perm[d]];  // result dim d walks x's dim perm[d]
  }
  Tensor out = Tensor::zeros({x.dtype(), shape});
  std::size_t size = elemSize(x);
  for (std::int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(static_cast<char*>(out.raw()) + i * size,
                static_cast<const char*>(x.raw()) + offsetOf(i, shape, strides) * size, size);
  return out;
}

Tensor pad(const Tensor& x, std::int64_t axis, std::int64_t before, std::int64_t after, double value) {
  axis = checkedAxis(axis, x, "pad");
  Shape shape = x.shape();
  shape[axis] += before + after;
  Tensor out = constant({x.dtype(), shape}, value);
  AxisView v = aroundAxis(x.shape(), axis);
  std::size_t row = std::size_t(v.inner) * elemSize(x);
  for (std::int64_t o = 0; o < v.outer; ++o)
    std::memcpy(static_cast<char*>(out.raw()) + (o * shape[axis] + before) * row,
                static_cast<const char*>(x.raw()) + o * v.n * row, v.n * row);
  return out;
}

// --- Compute ----------------------------------------------------------------

Tensor embedding(const Tensor& table, const Tensor& ids, std::int64_t lo) {
  if (ids.dtype() != DType::I64) unsupported("embedding", ids, "i64 ids");
  TXL_CHECK(table.type().rank() == 2, "embedding table must be [rows, dim], got " + table.type().str());
  std::int64_t rows = table.shape()[0];
  Shape shape = ids.shape();
  shape.push_back(table.shape()[1]);
  Tensor out = Tensor::zeros({table.dtype(), shape});  // zero bytes are zero in every dtype
  std::size_t rowBytes = std::size_t(table.shape()[1]) * elemSize(table);
  for (std::int64_t i = 0; i < ids.numel(); ++i) {
    std::int64_t r = ids.data<std::int64_t>()[i] - lo;
    if (r >= 0 && r < rows)
      std::memcpy(static_cast<char*>(out.raw()) + i * rowBytes, static_cast<const char*>(table.raw()) + r * rowBytes,
                  rowBytes);
  }
  return out;
}

Tensor convert(const Tensor& x, DType dtype) { return fromF32(toF32(x, "convert").clone(), dtype); }

Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias, std::optional<DType> outType) {
  Tensor xf = toF32(x, "linear"), wf = toF32(w, "linear");
  Tensor bf = bias ? toF32(*bias, "linear") : Tensor();
  TXL_CHECK(w.type().rank() == 2, "linear weight must be [out, in], got " + w.type().str());
  std::int64_t in = w.shape()[1], outF = w.shape()[0];
  TXL_CHECK(x.type().rank() >= 1 && x.shape().back() == in, "linear: " + x.type().str() + " vs " + w.type().str());
  Shape shape = x.shape();
  shape.back() = outF;
  Tensor out = Tensor::zeros({DType::F32, shape});
  for (std::int64_t r = 0; r < leadingCount(x.shape()); ++r)
    for (std::int64_t o = 0; o < outF; ++o) {
      double acc = bias ? double(bf.data<float>()[o]) : 0.0;
      for (std::int64_t i = 0; i < in; ++i) acc += double(xf.data<float>()[r * in + i]) * wf.data<float>()[o * in + i];
      out.data<float>()[r * outF + o] = float(acc);
    }
  return fromF32(out, outType.value_or(x.dtype()));
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transposeA, bool transposeB) {
  Tensor af = toF32(a, "matmul"), bf = toF32(b, "matmul");
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  TXL_CHECK(as.size() >= 2 && bs.size() >= 2, "matmul needs rank >= 2");
  std::int64_t aRows = as[as.size() - 2], aCols = as.back(), bRows = bs[bs.size() - 2], bCols = bs.back();
  // op(a)[m, k] = a[m * aStrideM + k * aStrideK] within one matrix; likewise op(b)[k, n].
  std::int64_t m = transposeA ? aCols : aRows, k = transposeA ? aRows : aCols;
  std::int64_t n = transposeB ? bRows : bCols;
  TXL_CHECK(k == (transposeB ? bCols : bRows), "matmul: contraction sizes differ");
  std::int64_t aStrideM = transposeA ? 1 : aCols, aStrideK = transposeA ? aCols : 1;
  std::int64_t bStrideK = transposeB ? 1 : bCols, bStrideN = transposeB ? bCols : 1;

  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  auto batch = ir::broadcastShapes(aBatch, bBatch);
  TXL_CHECK(batch.has_value(), "matmul: batch dimensions do not broadcast");
  auto aBatchStrides = broadcastStrides(aBatch, *batch), bBatchStrides = broadcastStrides(bBatch, *batch);
  Shape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  Tensor out = Tensor::zeros({DType::F32, shape});
  std::int64_t batches = ir::TensorType{DType::F32, *batch}.numel();
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    const float* pa = af.data<float>() + offsetOf(bi, *batch, aBatchStrides) * aRows * aCols;
    const float* pb = bf.data<float>() + offsetOf(bi, *batch, bBatchStrides) * bRows * bCols;
    float* pc = out.data<float>() + bi * m * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::int64_t p = 0; p < k; ++p)
          acc += double(pa[i * aStrideM + p * aStrideK]) * pb[p * bStrideK + j * bStrideN];
        pc[i * n + j] = float(acc);
      }
  }
  return fromF32(out, a.dtype());
}

Tensor layerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  Tensor xf = toF32(x, "layer_norm"), gf = toF32(gamma, "layer_norm"), bf = toF32(beta, "layer_norm");
  TXL_CHECK(x.type().rank() >= 1, "layer_norm of a scalar");
  std::int64_t c = x.shape().back();
  TXL_CHECK(gamma.numel() == c && beta.numel() == c, "layer_norm: gamma/beta do not match " + x.type().str());
  Tensor out = Tensor::zeros({DType::F32, x.shape()});
  for (std::int64_t r = 0; r < leadingCount(x.shape()); ++r) {
    const float* src = xf.data<float>() + r * c;
    float* dst = out.data<float>() + r * c;
    double mean = 0.0, var = 0.0;
    for (std::int64_t i = 0; i < c; ++i) mean += src[i];
    mean /= double(c);
    for (std::int64_t i = 0; i < c; ++i) var += (src[i] - mean) * (src[i] - mean);
    var /= double(c);  // biased, as PyTorch
    double inv = 1.0 / std::sqrt(var + eps);
    for (std::int64_t i = 0; i < c; ++i)
      dst[i] = float((src[i] - mean) * inv * gf.data<float>()[i] + bf.data<float>()[i]);
  }
  return fromF32(out, x.dtype());
}

Tensor softmax(const Tensor& x, std::int64_t axis) { return softmaxImpl(x, axis, false, "softmax"); }
Tensor logSoftmax(const Tensor& x, std::int64_t axis) { return softmaxImpl(x, axis, true, "log_softmax"); }

Tensor relShift(const Tensor& x) {
  // Per [Q, K] matrix, as the reference does it: pad one zero column in front
  // ([Q, K+1]), read that buffer as [K+1, Q], drop its first row (Q values)
  // and read the remaining Q*K values as [Q, K]. So y's flat element p is
  // padded's flat element Q + p.
  TXL_CHECK(x.type().rank() >= 2, "rel_shift needs rank >= 2, got " + x.type().str());
  std::int64_t q = x.shape()[x.shape().size() - 2], k = x.shape().back();
  Tensor out = Tensor::zeros(x.type());
  std::size_t size = elemSize(x);
  std::int64_t matrices = q * k == 0 ? 0 : x.numel() / (q * k);
  for (std::int64_t b = 0; b < matrices; ++b)
    for (std::int64_t p = 0; p < q * k; ++p) {
      std::int64_t padded = q + p, row = padded / (k + 1), col = padded % (k + 1);
      if (col == 0) continue;  // the zero column
      std::memcpy(static_cast<char*>(out.raw()) + (b * q * k + p) * size,
                  static_cast<const char*>(x.raw()) + (b * q * k + row * k + col - 1) * size, size);
    }
  return out;
}

Tensor pick(const Tensor& x, const Tensor& idx) {
  if (idx.dtype() != DType::I64) unsupported("pick", idx, "i64 indices");
  TXL_CHECK(x.type().rank() >= 1 && x.numel() == idx.numel() * x.shape().back(),
            "pick: " + idx.type().str() + " does not index " + x.type().str());
  std::int64_t n = x.shape().back();
  Tensor out = Tensor::zeros({x.dtype(), idx.shape()});
  std::size_t size = elemSize(x);
  for (std::int64_t r = 0; r < idx.numel(); ++r) {
    std::int64_t j = idx.data<std::int64_t>()[r];
    if (j < 0 || j >= n)
      throw Error("pick: index " + std::to_string(j) + " at position " + std::to_string(r) + " is outside [0, " +
                  std::to_string(n) + ")");
    std::memcpy(static_cast<char*>(out.raw()) + r * size, static_cast<const char*>(x.raw()) + (r * n + j) * size, size);
  }
  return out;
}

}  // namespace txl::backend::ref
