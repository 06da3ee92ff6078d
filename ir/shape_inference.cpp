// ir/shape_inference.cpp - one case per op kind; no default, so a new op in
// ops.def fails to compile here until its rule is written.
#include "ir/shape_inference.h"

#include <algorithm>
#include <numeric>

namespace txl::ir {

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<std::int64_t> normalizeAxis(std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

namespace {

Inferred fail(std::string message) { return Inferred{std::nullopt, std::move(message)}; }
Inferred ok(TensorType type) { return Inferred{std::move(type), {}}; }
Inferred sink() { return Inferred{std::nullopt, {}}; }

// Attribute checks: return an error message, or empty when fine.
std::string needAttr(const Attrs& attrs, const std::string& key, std::size_t index) {
  if (!attrs.has(key)) return "missing attribute '" + key + "'";
  if (attrs.items().at(key).index() != index) {
    static const char* names[] = {"a bool", "an integer", "a float", "a string", "an integer list"};
    if (index == 2 && attrs.items().at(key).index() == 1) return {};  // an integer is a fine float
    return "attribute '" + key + "' must be " + names[index];
  }
  return {};
}
constexpr std::size_t kBool = 0, kInt = 1, kFloat = 2, kString = 3, kInts = 4;

#define TXL_NEED(key, index)                                              \
  do {                                                                    \
    if (auto e = needAttr(attrs, key, index); !e.empty()) return fail(e); \
  } while (0)

// An optional attribute: absent, or of the given kind.
#define TXL_ALLOW(key, index)                                               \
  do {                                                                      \
    if (attrs.has(key))                                                     \
      if (auto e = needAttr(attrs, key, index); !e.empty()) return fail(e); \
  } while (0)

Inferred declaredSource(const std::optional<TensorType>& declared, const char* what) {
  if (!declared) return fail(std::string(what) + " needs a declared type");
  for (auto d : declared->shape)
    if (d < 0) return fail("negative dimension in " + declared->str());
  return ok(*declared);
}

Inferred elementwise(const std::vector<TensorType>& ops) {
  if (ops[0].dtype != ops[1].dtype) return fail("operand dtypes differ: " + ops[0].str() + " vs " + ops[1].str());
  auto shape = broadcastShapes(ops[0].shape, ops[1].shape);
  if (!shape) return fail("shapes do not broadcast: " + ops[0].str() + " vs " + ops[1].str());
  return ok({ops[0].dtype, *shape});
}

Inferred floatUnary(const TensorType& x) {
  if (x.dtype == DType::I64) return fail("expected a floating-point operand, got " + x.str());
  return ok(x);
}

Inferred axisOp(const TensorType& x, const Attrs& attrs) {
  TXL_NEED("axis", kInt);
  if (!normalizeAxis(attrs.getInt("axis"), x.rank()))
    return fail("axis " + std::to_string(attrs.getInt("axis")) + " out of range for " + x.str());
  return floatUnary(x);
}

Inferred matmul(const std::vector<TensorType>& ops, const Attrs& attrs) {
  const auto& a = ops[0];
  const auto& b = ops[1];
  if (a.rank() < 2 || b.rank() < 2) return fail("operands need rank >= 2, got " + a.str() + ", " + b.str());
  if (a.dtype != b.dtype) return fail("operand dtypes differ: " + a.str() + " vs " + b.str());
  TXL_ALLOW("transpose_a", kBool);
  TXL_ALLOW("transpose_b", kBool);
  bool ta = attrs.getBool("transpose_a"), tb = attrs.getBool("transpose_b");
  std::int64_t m = ta ? a.shape[a.rank() - 1] : a.shape[a.rank() - 2];
  std::int64_t ka = ta ? a.shape[a.rank() - 2] : a.shape[a.rank() - 1];
  std::int64_t kb = tb ? b.shape[b.rank() - 1] : b.shape[b.rank() - 2];
  std::int64_t n = tb ? b.shape[b.rank() - 2] : b.shape[b.rank() - 1];
  if (ka != kb) return fail("contraction sizes differ: " + a.str() + " vs " + b.str());
  auto batch = broadcastShapes(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2));
  if (!batch) return fail("batch dimensions do not broadcast: " + a.str() + " vs " + b.str());
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return ok({a.dtype, out});
}

Inferred linear(const std::vector<TensorType>& ops, const Attrs& attrs) {
  const auto& x = ops[0];
  const auto& w = ops[1];
  DType outType = x.dtype;
  if (attrs.has("out_dtype")) {
    TXL_NEED("out_dtype", kString);
    const auto d = parseDType(attrs.getString("out_dtype"));
    if (!d || *d == DType::I64)
      return fail("out_dtype must be f32 or bf16, got '" + attrs.getString("out_dtype") + "'");
    outType = *d;
  }
  if (x.dtype == DType::I64 || w.dtype == DType::I64 || x.dtype != w.dtype)
    return fail("expected x and w of one float dtype, got " + x.str() + ", " + w.str());
  if (x.rank() < 1 || w.rank() != 2)
    return fail("expected x [..., in] and w [out, in], got " + x.str() + ", " + w.str());
  if (x.shape.back() != w.shape[1])
    return fail("input features " + std::to_string(x.shape.back()) + " != weight columns " +
                std::to_string(w.shape[1]));
  if (ops.size() == 3 && (ops[2].rank() != 1 || ops[2].shape[0] != w.shape[0]))
    return fail("bias must be [" + std::to_string(w.shape[0]) + "], got " + ops[2].str());
  Shape out = x.shape;
  out.back() = w.shape[0];
  return ok({outType, out});
}

Inferred concat(const std::vector<TensorType>& ops, const Attrs& attrs) {
  TXL_NEED("axis", kInt);
  auto axis = normalizeAxis(attrs.getInt("axis"), ops[0].rank());
  if (!axis) return fail("axis out of range for " + ops[0].str());
  Shape out = ops[0].shape;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    if (ops[i].rank() != ops[0].rank() || ops[i].dtype != ops[0].dtype)
      return fail("operand " + std::to_string(i) + " " + ops[i].str() + " does not match " + ops[0].str());
    for (std::int64_t d = 0; d < ops[0].rank(); ++d)
      if (d != *axis && ops[i].shape[d] != ops[0].shape[d])
        return fail("operand " + std::to_string(i) + " " + ops[i].str() + " does not match " + ops[0].str() +
                    " outside axis " + std::to_string(*axis));
    out[*axis] += ops[i].shape[*axis];
  }
  return ok({ops[0].dtype, out});
}

Inferred slice(const TensorType& x, const Attrs& attrs) {
  TXL_NEED("axis", kInt);
  TXL_NEED("start", kInt);
  TXL_NEED("end", kInt);
  auto axis = normalizeAxis(attrs.getInt("axis"), x.rank());
  if (!axis) return fail("axis out of range for " + x.str());
  std::int64_t start = attrs.getInt("start"), end = attrs.getInt("end");
  if (start < 0 || end < start || end > x.shape[*axis])
    return fail("range [" + std::to_string(start) + ", " + std::to_string(end) + ") outside axis " +
                std::to_string(*axis) + " of " + x.str());
  Shape out = x.shape;
  out[*axis] = end - start;
  return ok({x.dtype, out});
}

Inferred reshape(const TensorType& x, const Attrs& attrs) {
  TXL_NEED("shape", kInts);
  Shape shape = attrs.getInts("shape");
  for (auto d : shape)
    if (d < 0) return fail("negative dimension in " + shapeStr(shape));
  TensorType out{x.dtype, shape};
  if (out.numel() != x.numel()) return fail("cannot reshape " + x.str() + " to " + shapeStr(shape));
  return ok(out);
}

Inferred permute(const TensorType& x, const Attrs& attrs) {
  TXL_NEED("perm", kInts);
  const auto& perm = attrs.getInts("perm");
  if (std::int64_t(perm.size()) != x.rank()) return fail("perm " + shapeStr(perm) + " does not match " + x.str());
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < x.rank(); ++i)
    if (sorted[i] != i) return fail("perm " + shapeStr(perm) + " is not a permutation");
  Shape out(x.rank());
  for (std::int64_t i = 0; i < x.rank(); ++i) out[i] = x.shape[perm[i]];
  return ok({x.dtype, out});
}

Inferred pad(const TensorType& x, const Attrs& attrs) {
  TXL_NEED("axis", kInt);
  TXL_NEED("before", kInt);
  TXL_NEED("after", kInt);
  TXL_NEED("value", kFloat);
  auto axis = normalizeAxis(attrs.getInt("axis"), x.rank());
  if (!axis) return fail("axis out of range for " + x.str());
  if (attrs.getInt("before") < 0 || attrs.getInt("after") < 0) return fail("negative padding");
  Shape out = x.shape;
  out[*axis] += attrs.getInt("before") + attrs.getInt("after");
  return ok({x.dtype, out});
}

Inferred embedding(const std::vector<TensorType>& ops, const Attrs& attrs) {
  TXL_NEED("lo", kInt);
  const auto& table = ops[0];
  const auto& ids = ops[1];
  if (table.rank() != 2) return fail("table must be [rows, dim], got " + table.str());
  if (ids.dtype != DType::I64) return fail("ids must be i64, got " + ids.str());
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  return ok({table.dtype, out});
}

Inferred layerNorm(const std::vector<TensorType>& ops, const Attrs& attrs) {
  TXL_NEED("eps", kFloat);
  const auto& x = ops[0];
  if (x.rank() < 1) return fail("x must have rank >= 1");
  for (int i = 1; i <= 2; ++i)
    if (ops[i].rank() != 1 || ops[i].shape[0] != x.shape.back())
      return fail(std::string(i == 1 ? "gamma" : "beta") + " must be [" + std::to_string(x.shape.back()) + "], got " +
                  ops[i].str());
  return floatUnary(x);
}

Inferred relShift(const TensorType& x) {
  if (x.rank() < 2) return fail("expected [..., Q, K], got " + x.str());
  if (x.shape[x.rank() - 1] < x.shape[x.rank() - 2]) return fail("expected K >= Q, got " + x.str());
  return floatUnary(x);
}

Inferred pick(const std::vector<TensorType>& ops) {
  const auto& x = ops[0];
  const auto& idx = ops[1];
  if (idx.dtype != DType::I64) return fail("indices must be i64, got " + idx.str());
  if (x.rank() < 1 || Shape(x.shape.begin(), x.shape.end() - 1) != idx.shape)
    return fail("indices " + idx.str() + " must have the shape of " + x.str() + " without its last axis");
  return ok({x.dtype, idx.shape});
}

Inferred relScores(const std::vector<TensorType>& ops, const Attrs& attrs) {
  TXL_NEED("scale", kFloat);
  TXL_NEED("value", kFloat);
  TXL_ALLOW("softmax", kBool);
  const auto& ac = ops[0];
  if (ac.rank() < 2 || ac.dtype != DType::F32) return fail("ac must be f32[..., Q, K], got " + ac.str());
  if (ops[1] != ac) return fail("bd " + ops[1].str() + " must match ac " + ac.str());
  Shape plane(ac.shape.end() - 2, ac.shape.end());
  if (ops[2].dtype != DType::F32 || ops[2].shape != plane)
    return fail("mask must be f32" + shapeStr(plane) + ", got " + ops[2].str());
  return ok(ac);
}

Inferred relAttention(const std::vector<TensorType>& ops, const Attrs& attrs) {
  TXL_NEED("scale", kFloat);
  // k and v may be bf16 (a bf16 state window, passes/bf16_state.cpp); the rest is f32.
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].dtype != DType::F32 && !((i == 2 || i == 3) && ops[i].dtype == DType::BF16))
      return fail(i == 2 || i == 3 ? "k and v must be f32 or bf16, got " + ops[i].str()
                                   : "operands other than k and v must be f32, got " + ops[i].str());
  const auto& qu = ops[0];
  const auto& keys = ops[2];
  if (qu.rank() != 4) return fail("qu must be f32[Q, B, H, D], got " + qu.str());
  if (ops[1] != qu) return fail("qv " + ops[1].str() + " must match qu " + qu.str());
  const std::int64_t q = qu.shape[0], b = qu.shape[1], h = qu.shape[2], d = qu.shape[3];
  if (keys.rank() != 4 || Shape(keys.shape.begin() + 1, keys.shape.end()) != Shape{b, h, d})
    return fail("k must be [K, " + std::to_string(b) + ", " + std::to_string(h) + ", " + std::to_string(d) +
                "] (qu's B, H, D), got " + keys.str());
  const std::int64_t k = keys.shape[0];
  if (ops[3] != keys) return fail("v " + ops[3].str() + " must match k " + keys.str());
  if (ops[4].shape != Shape{h, d, k}) return fail("rt must be f32" + shapeStr({h, d, k}) + ", got " + ops[4].str());
  if (ops[5].shape != Shape{q, k}) return fail("mask must be f32" + shapeStr({q, k}) + ", got " + ops[5].str());
  if (ops.size() == 7 && ops[6].shape != Shape{b, 1, 1, k})
    return fail("pad must be f32" + shapeStr({b, 1, 1, k}) + ", got " + ops[6].str());
  return ok(qu);
}

Inferred logprobPick(const std::vector<TensorType>& ops, const Attrs& attrs) {
  for (const char* key : {"offset", "start", "end", "classes"}) TXL_NEED(key, kInt);
  const auto& x = ops[0];
  const auto& idx = ops[1];
  if (x.dtype != DType::F32 || x.rank() < 1) return fail("x must be f32[..., N], got " + x.str());
  if (idx.dtype != DType::I64 || Shape(x.shape.begin(), x.shape.end() - 1) != idx.shape)
    return fail("indices must be i64 of the shape of " + x.str() + " without its last axis, got " + idx.str());
  const std::int64_t offset = attrs.getInt("offset"), start = attrs.getInt("start"), end = attrs.getInt("end"),
                     classes = attrs.getInt("classes");
  if (start < 0 || end < start || end > x.shape.back())
    return fail("needs 0 <= start <= end <= " + std::to_string(x.shape.back()) + ", got start " +
                std::to_string(start) + ", end " + std::to_string(end));
  if (offset < 0 || offset + (end - start) > classes)
    return fail("ids [" + std::to_string(offset) + ", " + std::to_string(offset + end - start) +
                ") must lie in [0, classes = " + std::to_string(classes) + ")");
  if (ops.size() == 3) {
    TXL_NEED("column", kInt);
    const auto& y = ops[2];
    if (y.dtype != DType::F32 || y.rank() != x.rank() || Shape(y.shape.begin(), y.shape.end() - 1) != idx.shape)
      return fail("y must be f32 with the leading shape of " + x.str() + ", got " + y.str());
    const std::int64_t column = attrs.getInt("column");
    if (column < 0 || column >= y.shape.back())
      return fail("column " + std::to_string(column) + " is outside y " + y.str());
  } else if (attrs.has("column")) {
    return fail("attribute 'column' needs the operand y");
  }
  return ok({DType::F32, idx.shape});
}

// Operands x, w, idx, then bias, y, proj as the attributes say; the checks
// of logprob_pick on the logits' type [..., N].
Inferred logprobPickGathered(const std::vector<TensorType>& ops, const Attrs& attrs) {
  for (const char* key : {"bias", "proj"}) TXL_ALLOW(key, kBool);
  const bool bias = attrs.getBool("bias"), proj = attrs.getBool("proj"), head = attrs.has("column");
  const std::size_t expected = 3 + std::size_t(bias) + std::size_t(head) + std::size_t(proj);
  if (ops.size() != expected)
    return fail("expected " + std::to_string(expected) + " operands (x, w, idx" + (bias ? ", bias" : "") +
                (head ? ", y" : "") + (proj ? ", proj" : "") + "), got " + std::to_string(ops.size()));
  const auto& x = ops[0];
  const auto& w = ops[1];
  if (x.dtype != DType::F32 || x.rank() < 1) return fail("x must be f32[..., d], got " + x.str());
  if (w.rank() != 2 || w.dtype == DType::I64) return fail("w must be f32 or bf16 [N, e], got " + w.str());
  std::int64_t features = x.shape.back();
  if (proj) {
    const auto& p = ops.back();
    if (p.dtype != DType::F32 || p.rank() != 2 || p.shape[0] != features)
      return fail("proj must be f32[" + std::to_string(features) + ", e], got " + p.str());
    features = p.shape[1];
  }
  if (w.shape[1] != features)
    return fail("w " + w.str() + " must have " + std::to_string(features) + " columns (the rows' features)");
  if (bias && (ops[3].dtype != DType::F32 || ops[3].shape != Shape{w.shape[0]}))
    return fail("bias must be f32[" + std::to_string(w.shape[0]) + "], got " + ops[3].str());
  Shape logits = x.shape;
  logits.back() = w.shape[0];
  std::vector<TensorType> pick = {{DType::F32, logits}, ops[2]};
  if (head) pick.push_back(ops[3 + std::size_t(bias)]);
  return logprobPick(pick, attrs);
}

Inferred fusedLinear(const std::vector<TensorType>& ops, const Attrs& attrs) {
  for (const char* key : {"bias", "relu", "residual"}) TXL_ALLOW(key, kBool);
  const bool bias = attrs.getBool("bias"), residual = attrs.getBool("residual");
  if (ops.size() != 2 + std::size_t(bias) + std::size_t(residual))
    return fail("expected " + std::to_string(2 + int(bias) + int(residual)) +
                " operands for bias = " + (bias ? "true" : "false") + ", residual = " + (residual ? "true" : "false") +
                ", got " + std::to_string(ops.size()));
  Inferred y = linear(std::vector<TensorType>(ops.begin(), ops.begin() + 2 + bias), attrs);
  if (!y.ok()) return y;
  if (residual && ops.back() != *y.type) return fail("residual must be " + y.type->str() + ", got " + ops.back().str());
  return y;
}

Inferred maskedFill(const std::vector<TensorType>& ops, const Attrs& attrs) {
  TXL_NEED("value", kFloat);
  auto shape = broadcastShapes(ops[0].shape, ops[1].shape);
  if (!shape || *shape != ops[0].shape) return fail("mask " + ops[1].str() + " does not broadcast to " + ops[0].str());
  return floatUnary(ops[0]);
}

}  // namespace

Inferred inferType(OpKind kind, const std::vector<TensorType>& ops, const Attrs& attrs,
                   const std::optional<TensorType>& declared) {
  const OpInfo& info = opInfo(kind);
  if (int(ops.size()) < info.minOperands || (info.maxOperands >= 0 && int(ops.size()) > info.maxOperands))
    return fail("takes " + std::to_string(info.minOperands) +
                (info.maxOperands == info.minOperands ? ""
                 : info.maxOperands < 0               ? " or more"
                                                      : " to " + std::to_string(info.maxOperands)) +
                " operands, got " + std::to_string(ops.size()));
  switch (kind) {
    case OpKind::Input:
    case OpKind::Weight:
      TXL_NEED("name", kString);
      return declaredSource(declared, info.name.data());
    case OpKind::Constant:
      TXL_NEED("value", kFloat);
      return declaredSource(declared, "constant");
    case OpKind::MemRead:
      TXL_NEED("slot", kInt);
      return declaredSource(declared, "mem_read");
    case OpKind::PosEncoding: {
      TXL_NEED("klen", kInt);
      TXL_NEED("d", kInt);
      TXL_NEED("clamp_len", kInt);
      std::int64_t klen = attrs.getInt("klen"), d = attrs.getInt("d");
      if (klen < 0 || d <= 0 || d % 2) return fail("needs klen >= 0 and an even d > 0");
      return ok({DType::F32, {klen, d}});
    }
    case OpKind::AttnMask: {
      TXL_NEED("qlen", kInt);
      TXL_NEED("mlen", kInt);
      TXL_NEED("mem_len", kInt);
      TXL_NEED("same_length", kBool);
      std::int64_t qlen = attrs.getInt("qlen"), mlen = attrs.getInt("mlen");
      if (qlen < 0 || mlen < 0) return fail("needs qlen >= 0 and mlen >= 0");
      return ok({DType::F32, {qlen, mlen + qlen}});
    }
    case OpKind::Output:
      TXL_NEED("name", kString);
      return sink();
    case OpKind::MemWrite:
      TXL_NEED("slot", kInt);
      return sink();
    case OpKind::MemWindow: {
      TXL_NEED("slot", kInt);
      TXL_NEED("mlen", kInt);
      TXL_NEED("keep", kInt);
      const TensorType& x = ops[0];
      std::int64_t mlen = attrs.getInt("mlen"), keep = attrs.getInt("keep");
      if (x.rank() < 1) return fail("x must have rank >= 1");
      if (mlen < 0 || keep < 0 || keep > mlen + x.shape[0])
        return fail("needs mlen >= 0 and 0 <= keep <= mlen + rows of x");
      TensorType out = x;
      out.shape[0] += mlen;
      return ok(out);
    }
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
      return elementwise(ops);
    case OpKind::Scale:
      TXL_NEED("factor", kFloat);
      return floatUnary(ops[0]);
    case OpKind::Relu:
      return floatUnary(ops[0]);
    case OpKind::MaskedFill:
      return maskedFill(ops, attrs);
    case OpKind::Concat:
      return concat(ops, attrs);
    case OpKind::Slice:
      return slice(ops[0], attrs);
    case OpKind::Reshape:
      return reshape(ops[0], attrs);
    case OpKind::Permute:
      return permute(ops[0], attrs);
    case OpKind::Pad:
      return pad(ops[0], attrs);
    case OpKind::Embedding:
      return embedding(ops, attrs);
    case OpKind::Convert: {
      TXL_NEED("dtype", kString);
      const auto d = parseDType(attrs.getString("dtype"));
      if (!d || *d == DType::I64) return fail("dtype must be f32 or bf16, got '" + attrs.getString("dtype") + "'");
      if (ops[0].dtype == DType::I64) return fail("expected a floating-point operand, got " + ops[0].str());
      return ok({*d, ops[0].shape});
    }
    case OpKind::Quantize:
      if (ops[0].dtype != DType::F32 || ops[0].rank() != 2)
        return fail("expected an f32 matrix [rows, n], got " + ops[0].str());
      return ok(ops[0]);
    case OpKind::Linear:
      return linear(ops, attrs);
    case OpKind::MatMul:
      return matmul(ops, attrs);
    case OpKind::LayerNorm:
      return layerNorm(ops, attrs);
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return axisOp(ops[0], attrs);
    case OpKind::RelShift:
      return relShift(ops[0]);
    case OpKind::Pick:
      return pick(ops);
    case OpKind::RelScores:
      return relScores(ops, attrs);
    case OpKind::RelAttention:
      return relAttention(ops, attrs);
    case OpKind::FusedLinear:
      return fusedLinear(ops, attrs);
    case OpKind::LogprobPick:
      return logprobPick(ops, attrs);
    case OpKind::LogprobPickGathered:
      return logprobPickGathered(ops, attrs);
  }
  return fail("unknown op");
}

}  // namespace txl::ir
