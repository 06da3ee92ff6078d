// passes/all_passes.h - every pass class named in passes.def.
#pragma once

#include "passes/cache_projected_memory.h"
#include "passes/dead_code_elimination.h"
#include "passes/window_memory.h"
