#!/usr/bin/env bash
# Installs what txlc needs to build and test on Debian 12 (bookworm), with apt-get.
# Idempotent: when every package is already there it only checks and exits quietly.
#   scripts/install-deps.sh           build + test dependencies
#   scripts/install-deps.sh --fuzz    also clang-14 and its sanitizer/libFuzzer runtimes
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libdnnl-dev ocl-icd-opencl-dev      # oneDNN 2.6 (its CMake config needs the OpenCL headers)
  libboost-graph-dev                  # the IR's graph
  nlohmann-json3-dev                  # JSON specs, graphs, reports
  catch2                              # unit tests (v2)
  libcli11-dev                        # the command line
  libcpp-httplib-dev                  # txlc serve's HTTP server
  pybind11-dev python3-dev            # the Python module (python/)
  python3-numpy python3-pytest        # its arrays and its tests (tests/python/)
  python3-aiohttp                     # the server tests' SSE client and bench/serve_load.py
  python3-venv python3-pip            # pip install . into a venv (tests/install, docs/PYTHON.md)
  man-db zsh                          # the install test renders the man page and loads the zsh completion
  libopenmpi-dev openmpi-bin          # split runs under mpirun (optional: CMake's TXLC_MPI builds without it)
  clang-format                        # the format check (scripts/check-format.sh, CI)
)
if [[ "${1:-}" == "--fuzz" ]]; then
  packages+=(clang-14 libclang-rt-14-dev libomp-14-dev)  # libomp: clang's OpenMP for the tools library
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
