// driver/weight_reads.h - which weights a segment reads only row by row.
//
// fold-embedding-projections turns a projection of looked-up embedding rows
// into a lookup in a projected table built once per plan (the first layer's
// q, k and v of a character model): a step then reads one row of that table
// per token, not the projection's matrix. In an optimized graph the matrix
// reaches such a table only through constant nodes (slices, the projection
// of the table, a bf16 conversion), so whether a step reads a weight whole
// is a question of where its constant values end: in the table operand of
// an embedding lookup, or anywhere else (a converted matrix a linear reads,
// say), which reads them whole. The memory floor of `txlc bench`
// (driver/bench.cpp) leaves the first kind out.
//
//   for (const std::string& name : rowReadWeights(g)) ...
#pragma once

#include <set>
#include <string>

#include "ir/graph.h"

namespace txl::driver {

// The names of g's weights every constant value made from which is read only
// as the table of an embedding lookup.
std::set<std::string> rowReadWeights(const ir::Graph& g);

}  // namespace txl::driver
