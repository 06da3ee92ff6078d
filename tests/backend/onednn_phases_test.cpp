// tests/backend/onednn_phases_test.cpp - each phase of the oneDNN plan
// (backend/onednn/onednn_phases.h) on its own: placement, liveness, in place,
// lowering, arena, each run on the plan the earlier phases made.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/onednn_lowering.h"
#include "backend/onednn/onednn_phases.h"
#include "backend/reference/reference_interpreter.h"
#include "ir/graph.h"

using namespace txl;
using namespace txl::backend;
using namespace txl::backend::onednn;
using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Shape;

namespace {

using I = std::int64_t;

ir::TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }

// The step of `n` in `order`.
std::size_t stepOf(const std::vector<Node>& order, Node n) {
  return std::size_t(std::find(order.begin(), order.end(), n) - order.begin());
}

// Phases 1-3 on `g`: what the lowering receives.
struct Planned {
  Plan plan;
  std::vector<Node> order;
  Placement placement;
  Planned(const ir::Graph& g, const TensorMap& weights = {}, bool live = true, bool inPlace = true)
      : order(g.topologicalOrder()), placement(placeValues(g, order, weights, plan)) {
    if (live) extendLiveness(g, order, placement, plan.arenaValues);
    if (live && inPlace) shareInPlace(g, order, placement, plan.arenaValues);
  }
  const ArenaValue& value(Node n) const { return plan.arenaValues.at(std::size_t(placement.at(n).root)); }
};

}  // namespace

TEST_CASE("placement: inputs, weights and constants get their own buffers, outside the arena", "[phases]") {
  ir::Graph g;
  const Node x = g.addInput("x", f32({4, 8}));
  const Node m = g.add(OpKind::MemRead, {}, {{"slot", I(0)}}, f32({3, 8}));
  const Node w = g.addWeight("w", f32({8, 8}));
  const Node c = g.add(OpKind::Constant, {}, {{"value", 0.5}}, f32({2, 3}));
  g.addOutput("y", g.add(OpKind::Linear, {g.add(OpKind::Concat, {m, x}, {{"axis", I(0)}}), w}));
  g.addOutput("c", c);
  const ir::Tensor wt = ir::Tensor::zeros(f32({8, 8}));
  const TensorMap weights{{"w", wt}};  // outlives the plan, which points at it
  Planned p(g, weights, false);
  const auto kindOf = [&](Node n) { return p.plan.buffers.at(std::size_t(p.placement.at(n).view.buffer)).kind; };
  CHECK(kindOf(x) == BufferKind::Input);
  CHECK(kindOf(m) == BufferKind::Input);
  REQUIRE(p.plan.inputs.size() == 2);
  CHECK(((p.plan.inputs[0].name == "x" && p.plan.inputs[1].name == "mem.0") ||
         (p.plan.inputs[0].name == "mem.0" && p.plan.inputs[1].name == "x")));
  CHECK(kindOf(w) == BufferKind::Weight);
  CHECK(p.plan.buffers.at(std::size_t(p.placement.at(w).view.buffer)).ptr == wt.raw());  // bound in place, no copy
  CHECK(kindOf(c) == BufferKind::Constant);
  CHECK(p.plan.constantBytes == 2 * 3 * 4);
  for (Node n : {x, m, w, c}) CHECK(p.placement.at(n).root == -1);
  // The concat and the linear compute arena values of their own, live at their own step only (no liveness yet).
  REQUIRE(p.plan.arenaValues.size() == 2);
  for (const ArenaValue& v : p.plan.arenaValues) CHECK(v.request.first == v.request.last);
  CHECK(p.plan.arenaValues[0].request.label.rfind("concat (node ", 0) == 0);
}

TEST_CASE("placement: reshapes, contiguous slices and sinks of arena values alias; a slice a permute reads is strided",
          "[phases]") {
  ir::Graph g;
  const Node x = g.addInput("x", f32({6, 2, 15}));
  const Node a = g.add(OpKind::Scale, {x}, {{"factor", 2.0}});
  const Node rows = g.add(OpKind::Slice, {a}, {{"axis", I(0)}, {"start", I(2)}, {"end", I(5)}});
  const Node k = g.add(OpKind::Slice, {a}, {{"axis", I(2)}, {"start", I(5)}, {"end", I(10)}});
  const Node heads = g.add(OpKind::Reshape, {k}, {{"shape", std::vector<I>{6, 2, 1, 5}}});
  const Node perm = g.add(OpKind::Permute, {heads}, {{"perm", std::vector<I>{1, 2, 0, 3}}});
  const Node outRows = g.addOutput("rows", rows);
  g.addOutput("perm", perm);
  const Node outX = g.addOutput("x", x);
  Planned p(g, {}, false);
  const PlacedValue& pa = p.placement.at(a);
  REQUIRE(pa.root >= 0);
  CHECK_FALSE(pa.aliased);
  // rows 2..4 of a: an alias at 2 rows of 2 x 15 floats.
  CHECK(p.placement.at(rows).aliased);
  CHECK(p.placement.at(rows).root == pa.root);
  CHECK(p.placement.at(rows).view.offset == 2 * 30 * 4);
  CHECK(p.placement.at(rows).view.strides.empty());
  // columns 5..9: read in place by the permute through a's strides, and so is the reshape of it.
  CHECK(p.placement.at(k).aliased);
  CHECK(p.placement.at(k).view.offset == 5 * 4);
  CHECK(p.placement.at(k).view.strides == std::vector<std::int64_t>{30, 15, 1});
  CHECK(p.placement.at(heads).aliased);
  CHECK(p.placement.at(heads).view.strides == std::vector<std::int64_t>{30, 15, 5, 1});
  // The permute copies into a dense value of its own.
  CHECK_FALSE(p.placement.at(perm).aliased);
  CHECK(p.placement.at(perm).root != pa.root);
  // An output of an arena value is that value; an output of an input gets a value of its own (a copy).
  CHECK(p.placement.at(outRows).aliased);
  CHECK(p.placement.at(outRows).root == pa.root);
  CHECK_FALSE(p.placement.at(outX).aliased);
  CHECK(p.placement.at(outX).root >= 0);
  CHECK(p.plan.arenaValues.size() == 3);  // a, the permute, the copy of x
}

TEST_CASE("liveness: a value lives to the last read of it or any alias; what a sink returns to the last step",
          "[phases]") {
  ir::Graph g;
  const Node x = g.addInput("x", f32({4, 8}));
  const Node a = g.add(OpKind::Scale, {x}, {{"factor", 2.0}});
  const Node r = g.add(OpKind::Reshape, {a}, {{"shape", std::vector<I>{32}}});
  const Node b = g.add(OpKind::Relu, {x});
  const Node c = g.add(OpKind::Scale, {b}, {{"factor", 3.0}});
  const Node late = g.add(OpKind::Add, {g.add(OpKind::Reshape, {c}, {{"shape", std::vector<I>{32}}}), r});
  g.addOutput("y", late);
  Planned before(g, {}, false);
  Planned p(g, {}, true, false);
  const std::size_t end = p.order.size() - 1;
  // a is read through its reshape by the add: it lives to the add's step.
  CHECK(p.value(a).request.first == stepOf(p.order, a));
  CHECK(p.value(a).request.last == stepOf(p.order, late));
  CHECK(p.value(b).request.last == stepOf(p.order, c));
  CHECK(p.value(c).request.last == stepOf(p.order, late));
  CHECK(p.value(late).request.last == end);  // returned
  // Liveness changes `last` only.
  REQUIRE(before.plan.arenaValues.size() == p.plan.arenaValues.size());
  for (std::size_t i = 0; i < p.plan.arenaValues.size(); ++i) {
    CHECK(before.plan.arenaValues[i].request.first == p.plan.arenaValues[i].request.first);
    CHECK(before.plan.arenaValues[i].request.bytes == p.plan.arenaValues[i].request.bytes);
    CHECK(before.plan.arenaValues[i].request.last <= p.plan.arenaValues[i].request.last);
  }
}

TEST_CASE("in place: an elementwise op takes its operand's memory only when that dies at it, whole and unshared",
          "[phases]") {
  ir::Graph g;
  const Node x = g.addInput("x", f32({4, 8}));
  const Node a = g.add(OpKind::Scale, {x}, {{"factor", 2.0}});
  const Node ra = g.add(OpKind::Relu, {a});                      // a dies here: ra joins a
  const Node b = g.add(OpKind::Scale, {ra}, {{"factor", 3.0}});  // ra is read again below: b does not join
  const Node sq = g.add(OpKind::Mul, {b, b});                    // both operands read b's memory: sq does not join
  const Node part = g.add(OpKind::Slice, {sq}, {{"axis", I(0)}, {"start", I(1)}, {"end", I(3)}});
  const Node rp = g.add(OpKind::Relu, {part});                          // a part of sq's value only: rp does not join
  const Node last = g.add(OpKind::Concat, {ra, rp}, {{"axis", I(0)}});  // not elementwise: never in place
  g.addOutput("y", last);
  const Node rx = g.add(OpKind::Relu, {x});  // over an input's buffer, which is no arena value
  g.addOutput("z", rx);
  Planned p(g);
  const auto& values = p.plan.arenaValues;
  const int rootA = p.placement.at(a).root;
  CHECK(p.value(a).sameAs == -1);
  CHECK(p.value(ra).sameAs == rootA);
  CHECK(memoryOwner(values, p.placement.at(ra).root) == rootA);
  CHECK(p.value(a).request.last == stepOf(p.order, last));  // the group lives as long as its members
  CHECK(p.value(a).request.label.find(", relu (node ") != std::string::npos);
  CHECK(p.value(a).request.label.find(" in place") != std::string::npos);
  CHECK(p.value(b).sameAs == -1);
  CHECK(p.value(sq).sameAs == -1);
  CHECK(p.value(rp).sameAs == -1);
  CHECK(p.value(last).sameAs == -1);
  CHECK(p.value(rx).sameAs == -1);

  SECTION("the operand an elementwise op can compute into") {
    ir::Graph h;
    const Node u = h.addInput("u", f32({4, 8})), row = h.addInput("row", f32({8}));
    CHECK(inPlaceOperand(h, h.add(OpKind::Add, {u, row})) == 0);
    CHECK(inPlaceOperand(h, h.add(OpKind::Sub, {row, u})) == 1);  // the lowering swaps the operands
    CHECK(inPlaceOperand(h, h.add(OpKind::Softmax, {u}, {{"axis", I(-1)}})) == 0);
    CHECK(inPlaceOperand(h, h.add(OpKind::MatMul, {u, h.addInput("v", f32({8, 4}))})) == -1);
  }
}

TEST_CASE("lowering: temporaries and scratchpads live at their node's step only; outputs are named", "[phases]") {
  ir::Graph g;
  const Node s = g.addInput("s", f32({4, 6, 2, 3}));
  const Node sm = g.add(OpKind::Softmax, {s}, {{"axis", I(1)}});  // a non-last axis: via a transposed temporary
  g.addOutput("p", sm);
  g.add(OpKind::MemWrite, {g.add(OpKind::Relu, {sm})}, {{"slot", I(3)}});
  Planned p(g);
  const std::size_t placed = p.plan.arenaValues.size();
  PackedWeights packs;
  const PlanOutputs outputs = lowerGraph(p.plan, g, p.order, p.placement, OnednnOptions{}, packs);
  REQUIRE(outputs.size() == 2);
  std::vector<std::string> names{outputs[0].first, outputs[1].first};
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"mem.3", "p"});
  // Placement's values come first, untouched; the lowering's follow, each live at one step.
  REQUIRE(p.plan.arenaValues.size() > placed);
  bool temporary = false;
  for (std::size_t i = placed; i < p.plan.arenaValues.size(); ++i) {
    const ArenaValue& v = p.plan.arenaValues[i];
    CHECK(v.request.first == v.request.last);
    CHECK(v.sameAs == -1);
    if (v.request.label.rfind("temporary of softmax", 0) == 0) {
      temporary = true;
      CHECK(v.request.first == stepOf(p.order, sm));
    }
  }
  CHECK(temporary);
  CHECK(p.plan.steps.size() == p.plan.info.size());
  CHECK(p.plan.info.front().op == "softmax");
}

TEST_CASE("lowering: linear and fused_linear pack a constant weight by one rule", "[phases]") {
  // A heap weight of 1 KiB: packed under the default limit, read in place
  // (plain `ba`, no constant buffer) over a limit of 512 bytes; the same
  // results either way.
  for (const OpKind kind : {OpKind::Linear, OpKind::FusedLinear})
    for (const std::size_t limit : {OnednnOptions{}.maxBlockedWeightBytes, std::size_t(512)}) {
      INFO(ir::opInfo(kind).name << ", maxBlockedWeightBytes " << limit);
      ir::Graph g;
      const Node x = g.addInput("x", f32({4, 16})), w = g.addWeight("w", f32({16, 16}));
      g.addOutput("y", kind == OpKind::Linear
                           ? g.add(kind, {x, w})
                           : g.add(kind, {x, w}, {{"bias", false}, {"relu", true}, {"residual", false}}));
      ir::Tensor wt = ir::Tensor::zeros(f32({16, 16})), xt = ir::Tensor::zeros(f32({4, 16}));
      for (std::int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] = float(i % 7) - 3.0f;
      for (std::int64_t i = 0; i < xt.numel(); ++i) xt.data<float>()[i] = float(i % 5) * 0.25f - 0.5f;
      const TensorMap weights{{"w", wt}};
      OnednnOptions options;
      options.maxBlockedWeightBytes = limit;
      auto plan = makeOnednnExecutor(options)->compile(g, weights);
      if (limit >= wt.bytes()) CHECK(plan->constantBytes() >= wt.bytes());
      else CHECK(plan->constantBytes() == 0);
      const ir::Tensor& got = plan->run({{"x", xt}}).at("y");
      auto ref = makeReferenceExecutor()->compile(g, weights);
      const ir::Tensor& want = ref->run({{"x", xt}}).at("y");
      for (std::int64_t i = 0; i < want.numel(); ++i)
        CHECK(got.data<float>()[i] == Approx(want.data<float>()[i]).epsilon(1e-5).margin(1e-6));
    }
}

TEST_CASE("arena: owners get offsets, members their owner's address, inputs are bound on every run", "[phases]") {
  Plan plan;
  const ir::TensorType t = f32({64});  // 256 bytes
  const int b0 = plan.addArenaValue("v0", t.bytes(), 0, 1);
  const int b1 = plan.addArenaValue("v1", t.bytes(), 1, 2);
  const int b2 = plan.addArenaValue("v2", t.bytes(), 2, 3);  // computed in place over v0
  plan.arenaValues[2].sameAs = 0;
  plan.arenaValues[0].request.last = 3;
  const int in = plan.addBuffer(BufferKind::Input);
  const dnnl::memory::desc md({64}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  plan.bindings.push_back({dnnl::memory(md, plan.engine, nullptr), b1, 0});
  plan.bindings.push_back({dnnl::memory(md, plan.engine, nullptr), in, 0});
  plan.bindings.push_back({dnnl::memory(md, plan.engine, nullptr), b2, 128});
  placeArena(plan, {{"y", View{b1, 0, t}}});
  REQUIRE(plan.memory.buffers.size() == 2);  // v0 and v1 own their memory
  CHECK(plan.memory.arenaBytes == 512);
  CHECK(plan.buffers[std::size_t(b2)].ptr == plan.buffers[std::size_t(b0)].ptr);
  CHECK(plan.buffers[std::size_t(b1)].ptr != plan.buffers[std::size_t(b0)].ptr);
  CHECK(plan.outputs.at("y").raw() == plan.buffers[std::size_t(b1)].ptr);
  REQUIRE(plan.inputBindings == 1);
  CHECK(plan.bindings[0].buffer == in);
  for (std::size_t i = 1; i < plan.bindings.size(); ++i) {
    const Binding& b = plan.bindings[i];
    CHECK(b.mem.get_data_handle() == static_cast<char*>(plan.buffers[std::size_t(b.buffer)].ptr) + b.offset);
  }
}
