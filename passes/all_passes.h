// passes/all_passes.h - every pass class named in passes.def.
#pragma once

#include "passes/dead_code_elimination.h"
