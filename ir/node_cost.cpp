// ir/node_cost.cpp - per-node FLOP and byte formulas (docs/PASSES.md).
#include "ir/node_cost.h"

namespace txl::ir {

namespace {
double numel(const TensorType& t) { return double(t.numel()); }
}  // namespace

double matrixProductFlops(const Graph& g, Node n) {
  switch (g.kind(n)) {
    case OpKind::Linear:
    case OpKind::FusedLinear:  // x [..., in] · w [out, in]ᵀ: numel(out) dot products of length in
      return 2.0 * numel(g.type(n)) * double(g.type(g.operand(n, 1)).shape[1]);
    case OpKind::MatMul: {
      const TensorType& a = g.type(g.operand(n, 0));
      const bool ta = g.op(n).attrs.getBool("transpose_a");
      return 2.0 * numel(g.type(n)) * double(ta ? a.shape[a.rank() - 2] : a.shape.back());
    }
    case OpKind::RelAttention:  // qu · kᵀ, qv · rt and p · v: three [Q, K] x D products per (batch, head)
      return 3 * 2.0 * numel(g.type(n)) * double(g.type(g.operand(n, 2)).shape[0]);
    case OpKind::LogprobPickGathered: {  // as if every row were in range: rows · proj, then · wᵀ
      const TensorType& w = g.type(g.operand(n, 1));
      double f = 2.0 * numel(g.type(n)) * double(w.shape[0]) * double(w.shape[1]);
      if (g.op(n).attrs.getBool("proj"))
        f += 2.0 * numel(g.type(n)) * double(g.type(g.operand(n, 0)).shape.back()) * double(w.shape[1]);
      return f;
    }
    default:
      return 0;
  }
}

double nodeFlops(const Graph& g, Node n) {
  const OpKind kind = g.kind(n);
  if (!opInfo(kind).hasResult) return 0;
  const TensorType& out = g.type(n);
  switch (kind) {
    case OpKind::Linear:
    case OpKind::FusedLinear: {
      const auto& a = g.op(n).attrs;
      const bool bias = kind == OpKind::Linear ? g.numOperands(n) == 3 : a.getBool("bias");
      return matrixProductFlops(g, n) +
             numel(out) * (double(bias) + double(a.getBool("relu")) + double(a.getBool("residual")));
    }
    case OpKind::MatMul:
      return matrixProductFlops(g, n);
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Scale:
    case OpKind::Relu:
    case OpKind::MaskedFill:
      return numel(out);
    case OpKind::RelScores:
      return 3.0 * numel(out);
    case OpKind::RelAttention:  // the products, then per score the shift's add, the scale and a softmax
      return matrixProductFlops(g, n) +
             8.0 * numel(out) / double(out.shape.back()) * double(g.type(g.operand(n, 2)).shape[0]);
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return 5.0 * numel(out);
    case OpKind::LayerNorm:
      return 8.0 * numel(out);
    case OpKind::LogprobPick: {  // a log-sum-exp per row (and of y's row), as if every target were in range
      double f = 5.0 * numel(g.type(g.operand(n, 0)));
      if (g.numOperands(n) == 3) f += 5.0 * numel(g.type(g.operand(n, 2)));
      return f;
    }
    case OpKind::LogprobPickGathered: {  // the products, the bias, the log-sum-exps (and y's), every row in range
      const auto& a = g.op(n).attrs;
      const double logits = numel(out) * double(g.type(g.operand(n, 1)).shape[0]);
      double f = matrixProductFlops(g, n) + logits * (5.0 + double(a.getBool("bias")));
      if (a.has("column")) f += 5.0 * numel(g.type(g.operand(n, 3 + std::size_t(a.getBool("bias")))));
      return f;
    }
    default:
      return 0;
  }
}

double nodeBytes(const Graph& g, Node n) {
  switch (g.kind(n)) {
    case OpKind::Input:
    case OpKind::Weight:
    case OpKind::Constant:
    case OpKind::MemRead:
    case OpKind::Output:
    case OpKind::MemWrite:
    case OpKind::Reshape:  // a view
      return 0;
    default:
      break;
  }
  if (!opInfo(g.kind(n)).hasResult) return 0;
  double bytes = double(g.type(n).bytes());
  for (Node o : g.operands(n)) bytes += double(g.type(o).bytes());
  return bytes;
}

}  // namespace txl::ir
