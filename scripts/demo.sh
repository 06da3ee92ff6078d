#!/usr/bin/env bash
# The quick-start demo: installs what is needed, builds txlc, and runs it on
# the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
txlc=build/tools/txlc
echo "== the bundled conformance cases, on oneDNN with the default pipeline" >&2
"$txlc" conformance tests/conformance/*/
