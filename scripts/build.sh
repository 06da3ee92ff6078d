#!/usr/bin/env bash
# Configures and builds txlc (Release) into build/, installing dependencies
# first, then installs the Python module into the system interpreter's
# dist-packages (docs/PYTHON.md), so that `python3 -c "import txlc"` finds it.
#   scripts/build.sh [TARGET...] [-DVAR=VALUE...]
# Targets: what to build (every target when none is named: the test
# executables too); txlc_python is skipped when the module is off. Arguments
# starting with '-' go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=() cmake_args=()
for a in "$@"; do
  if [[ $a == -* ]]; then cmake_args+=("$a"); else targets+=("$a"); fi
done
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
python=0
grep -q '^TXLC_PYTHON:BOOL=ON' build/CMakeCache.txt && python=1
build=()
for t in "${targets[@]}"; do
  [[ $t == txlc_python && $python -eq 0 ]] || build+=("$t")
done
ninja -C build -j"$(nproc)" "${build[@]}" >&2
if [[ $python -eq 1 ]] && { [[ ${#targets[@]} -eq 0 ]] || [[ " ${build[*]} " == *" txlc_python "* ]]; }; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo cmake --install build --component python >/dev/null
fi
