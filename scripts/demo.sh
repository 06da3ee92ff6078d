#!/usr/bin/env bash
# The quick-start demo: installs what is needed, builds txlc and the Python
# module only (the test executables are scripts/test.sh's), then runs the
# bundled character-level model end to end (scripts/kjv_demo.sh): compile it
# to an artifact and a standalone executable, print the optimized graph's
# summary, score the validation text against the reference's figure, and
# generate text.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh txlc txlc_python
scripts/kjv_demo.sh build/tools/txlc
