#!/usr/bin/env bash
# Configures and builds txlc (Release) into build/, installing dependencies
# first, then installs the Python module into the system interpreter's
# dist-packages (docs/PYTHON.md), so that `python3 -c "import txlc"` finds it.
#   scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
ninja -C build -j"$(nproc)" >&2
if grep -q '^TXLC_PYTHON:BOOL=ON' build/CMakeCache.txt; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo cmake --install build --component python >/dev/null
fi
