#!/usr/bin/env bash
# Fails (exit 1, naming each file) when a tracked C++ file differs from what
# clang-format makes of it under .clang-format; `--fix` rewrites them instead.
#   scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cc')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f differs from .clang-format (scripts/check-format.sh --fix)" >&2
    bad=1
  fi
done
exit "$bad"
