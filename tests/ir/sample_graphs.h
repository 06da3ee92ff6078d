// tests/ir/sample_graphs.h - small graphs the IR tests build and round-trip.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace txl::testing {

// One attention head over [memory | segment] with the rel-shift, mask and a
// residual layer norm: touches most ops of ops.def.
ir::Graph attentionSample();
// A linear layer with bias and relu.
ir::Graph mlpSample();

struct NamedGraph {
  std::string name;
  std::function<ir::Graph()> build;
};
std::vector<NamedGraph> allSamples();

}  // namespace txl::testing
