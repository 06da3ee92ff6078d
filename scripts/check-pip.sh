#!/usr/bin/env bash
# Checks `pip install .` as a user runs it, from nothing: a fresh venv made by Debian's python3 with
# --system-site-packages (numpy from python3-numpy), a plain `pip install .` of this source (its own CMake build in
# build-pip-cpXY/, which this removes first; ccache makes a second run fast), then the module and txlc from the venv.
# Offline: pip's build needs no package from an index (python/build_backend.py), numpy is already there.
#   scripts/check-pip.sh [PYTHON]     (default /usr/bin/python3); prints the seconds pip took
# tests/install/pip_install_test.sh is the ctest version, which reuses the build under test instead.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tag=$("$PYTHON" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
rm -rf "build-pip-$tag"
"$PYTHON" -m venv --system-site-packages "$work/venv"
start=$(date +%s)
"$work/venv/bin/pip" install --no-cache-dir . >"$work/pip.log" 2>&1 || { tail -40 "$work/pip.log"; exit 1; }
echo "check-pip: pip install . took $(($(date +%s) - start)) s" >&2
cd "$work"
"$work/venv/bin/txlc" --version | head -1
env -u PYTHONPATH -u TXLC_EXECUTABLE "$work/venv/bin/python" -c '
import sys, txlc
m = txlc.load(sys.argv[1], threads=1)
print("module:", txlc.__file__)
print("kjv-char bits/char:", round(m.score(open(sys.argv[2]).read(3000))["bits_per_char"], 4))
' "$OLDPWD/models/kjv-char" "$OLDPWD/models/kjv-char/valid.txt"
echo "check-pip: all passed"
