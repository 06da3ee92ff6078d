#!/usr/bin/env bash
# The quick-start demo: installs what is needed, builds txlc alone (the test
# executables are scripts/test.sh's) and runs the bundled character-level
# model end to end (scripts/kjv_demo.sh): compile it to an artifact and a
# standalone executable, print the optimized graph's summary, score the
# validation text against the reference's figure, and generate text. Then it
# builds and installs the Python module, which the demo does not need, so
# that `import txlc` works afterwards (docs/PYTHON.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh txlc
scripts/kjv_demo.sh build/tools/txlc
echo "== the Python module (import txlc): build and install" >&2
scripts/build.sh txlc_python
