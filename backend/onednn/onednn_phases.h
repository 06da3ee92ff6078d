// backend/onednn/onednn_phases.h - the phases that compile a graph into a oneDNN
// plan (backend/onednn/onednn_plan.h), in the order the executor runs them
// (internal to backend/).
//
// The core data structure is the Placement: for every node the view of its
// value (a buffer, a byte offset, a type, strides when not dense) and the
// arena value that view lies in. The plan's `arenaValues` are the requests
// the arena is planned from: a size and a live range [first, last] of steps
// of the schedule, the topological order; step t is the t-th node.
//
//   1. placeValues     every node's view: input and weight buffers bound
//                      late or in place, constant buffers, aliases (reshape,
//                      contiguous slices, sinks of arena values), strided
//                      views read in place, else a fresh arena value live at
//                      its own step only.
//   2. extendLiveness  an arena value lives to the last step that reads it
//                      or any alias of it; a value a sink (output, mem_write)
//                      returns lives to the last step.
//   3. shareInPlace    an elementwise-shaped node whose operand's value dies
//                      at it computes into that value's memory (sameAs).
//   4. lowerGraph      (onednn_lowering.h) every node's steps; temporaries and
//                      scratchpads become arena values live at their node's
//                      step only.
//   5. placeArena      offsets for the arena values that own their memory
//                      (backend/memory_plan.h), checked, allocated once;
//                      every arena buffer's address, every late binding.
//
// Phases 1-3 decide where values live and for how long, without oneDNN;
// phase 4 is the only one that builds primitives; phase 5 the only one that
// allocates the arena. A phase reads what the earlier ones wrote and changes
// only its own fields (liveness: `last`; in place: `sameAs`, the owner's
// `last` and label), so each can be tested on a plan the earlier ones made.
//
//   Plan plan;
//   const auto order = g.topologicalOrder();
//   Placement placement = placeValues(g, order, weights, plan);
//   extendLiveness(g, order, placement, plan.arenaValues);
//   shareInPlace(g, order, placement, plan.arenaValues);
//   auto outputs = lowerGraph(plan, g, order, placement, options, packs);
//   placeArena(plan, outputs);
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/onednn/onednn_plan.h"
#include "ir/graph.h"

namespace txl::backend::onednn {

// Where one node's value lives.
struct PlacedValue {
  View view;             // relative to its buffer (an arena value's buffer: offset within that value)
  int root = -1;         // index in Plan::arenaValues of the value the view lies in; -1 outside the arena
  bool aliased = false;  // a view of an operand's value, computed by no step of its own
};
using Placement = std::unordered_map<ir::Node, PlacedValue>;

// A graph result the plan returns: an output's name or "mem.<slot>", and the view it is read from.
using PlanOutputs = std::vector<std::pair<std::string, View>>;

// 1. Placement, in schedule order. Adds the input, weight and constant
// buffers and one arena value per node that computes a value of its own
// (live at its step only: first = last = its position in `order`).
Placement placeValues(const ir::Graph& g, const std::vector<ir::Node>& order, const TensorMap& weights, Plan& plan);

// 2. Liveness: every arena value's `last` becomes the last step reading it
// or any alias of it, and the last step of the schedule for a value a sink
// returns.
void extendLiveness(const ir::Graph& g, const std::vector<ir::Node>& order, const Placement& placement,
                    std::vector<ArenaValue>& values);

// 3. In place, in schedule order: the value of node n joins the memory of
// operand k's value (inPlaceOperand) when that value's group dies at n, the
// operand views it whole and dense, and no other operand of n reads it.
void shareInPlace(const ir::Graph& g, const std::vector<ir::Node>& order, const Placement& placement,
                  std::vector<ArenaValue>& values);
// The operand whose memory node `n` may compute into (an elementwise-shaped
// op reads element i of it only to write element i), or -1.
int inPlaceOperand(const ir::Graph& g, ir::Node n);
// The arena value that holds value `v`'s memory: `v` itself or, following
// sameAs, the value it was computed in place over.
int memoryOwner(const std::vector<ArenaValue>& values, int v);

// 5. The arena: plans the offsets of the values that own their memory
// (plan.memory), checks that no two values live at a common step overlap
// (txl::InternalError otherwise), allocates the arena, sets every arena
// buffer's address, makes `outputs` the plan's outputs, moves the bindings
// over inputs to the front (plan.inputBindings of them, bound on every run)
// and binds every other one now.
void placeArena(Plan& plan, const PlanOutputs& outputs);

// "linear (node 12, f32[80,1,512])": a node as diagnostics and buffer labels name it.
std::string nodeName(const ir::Graph& g, ir::Node n);

}  // namespace txl::backend::onednn
