// passes/all_passes.h - every pass class named in passes.def.
#pragma once

#include "passes/cache_projected_memory.h"
#include "passes/dead_code_elimination.h"
#include "passes/window_memory.h"
#include "passes/canonicalize.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/fold_bias_terms.h"
#include "passes/fold_positions.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_epilogues.h"
#include "passes/fuse_nll.h"
#include "passes/fuse_rel_shift.h"
#include "passes/gather_tail_clusters.h"
#include "passes/bf16_matmuls.h"
#include "passes/bf16_state.h"
#include "passes/int8_matmuls.h"
#include "passes/pretranspose_constants.h"
