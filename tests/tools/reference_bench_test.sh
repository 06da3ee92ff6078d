#!/bin/bash
# tests/tools/reference_bench_test.sh SOURCE_DIR PYTHON - the error paths of the reference column
# (scripts/bench.sh --reference DIR, bench/reference_bench.py; docs/PERFORMANCE.md, "Reproduce"):
# each ends with one line on stderr, nothing on stdout, and a non-zero exit (2: a usage error),
# before any benchmark runs. Needs neither torch nor the authors' code nor txlc: a torch package
# that fails to import stands in for a machine without torch, whether or not torch is installed.
#
# 1. scripts/bench.sh --reference with a missing directory, an empty one, and no directory.
# 2. bench/reference_bench.py: no --authors-code, a missing directory, one without
#    mem_transformer.py, a spec without n_layer, a non-positive --segments, and no torch.
# 3. scripts/bench.sh --reference with the authors' file present but no torch.
# 4. bench/contention.sh (the benchmark scripts' other harness): a bad --precision, an --only
#    that matches no benchmark, an unknown option.
set -u
SRC=$1
PY=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Runs "$@" and checks: exit $want, stdout empty, stderr exactly one line containing $needle.
# (set by the caller: want, needle)
one_line() {
  "$@" >"$T/out" 2>"$T/err"
  local rc=$? lines
  lines=$(wc -l <"$T/err")
  [[ $rc == "$want" ]] || bad "$*: exit $rc, expected $want"
  [[ ! -s $T/out ]] || bad "$*: wrote to stdout: $(head -c 200 "$T/out")"
  [[ $lines == 1 ]] || bad "$*: $lines lines on stderr, expected 1: $(cat "$T/err")"
  grep -qF -- "$needle" "$T/err" || bad "$*: stderr lacks '$needle': $(cat "$T/err")"
}

BENCH=$SRC/scripts/bench.sh
REF=$SRC/bench/reference_bench.py
SPEC=$SRC/bench/enwik8_base.json
mkdir -p "$T/empty" "$T/authors" "$T/notorch/torch"
# Stands in for the authors' file; never imported here (torch fails first).
echo "raise RuntimeError('not the authors code: imported by the test')" >"$T/authors/mem_transformer.py"
echo "raise ImportError('No module named torch (the test hides it)')" >"$T/notorch/torch/__init__.py"
echo '{"n_token": 10, "n_head": 2, "d_model": 8, "d_head": 4, "d_inner": 16}' >"$T/bad.json"

# 1. bench.sh: the directory is checked before txlc (a missing txlc would be named otherwise).
want=2 needle="--reference $T/missing"
one_line bash "$BENCH" --txlc "$T/no-txlc" --reference "$T/missing"
want=2 needle="no mem_transformer.py"
one_line bash "$BENCH" --txlc "$T/no-txlc" --reference "$T/empty"
want=2 needle="--reference: expected a directory"
one_line bash "$BENCH" --txlc "$T/no-txlc" --reference

# 2. reference_bench.py.
want=2 needle="--authors-code"
one_line "$PY" "$REF" "$SPEC"
want=2 needle="not a directory"
one_line "$PY" "$REF" --authors-code "$T/missing" "$SPEC"
want=2 needle="no mem_transformer.py"
one_line "$PY" "$REF" --authors-code "$T/empty" "$SPEC"
want=2 needle="/n_layer: required key is missing"
one_line "$PY" "$REF" --authors-code "$T/authors" "$T/bad.json"
want=2 needle="--segments: expected a positive integer, got 0"
one_line "$PY" "$REF" --authors-code "$T/authors" "$SPEC" --segments 0
want=2 needle="cannot import torch"
PYTHONPATH=$T/notorch one_line "$PY" "$REF" --authors-code "$T/authors" "$SPEC"

# 3. bench.sh passes reference_bench.py's line on.
want=2 needle="cannot import torch"
PYTHONPATH=$T/notorch one_line bash "$BENCH" --txlc "$T/no-txlc" --reference "$T/authors"

# 4. contention.sh, with an executable that is not txlc: nothing runs before the checks.
CONTENTION=$SRC/bench/contention.sh
want=2 needle="--precision: expected a comma-separated list of f32, bf16, int8, got 'f32,f16'"
one_line bash "$CONTENTION" --txlc /bin/true --precision f32,f16
want=2 needle="--only 'no such benchmark' matches no benchmark"
one_line bash "$CONTENTION" --txlc /bin/true --only "no such benchmark"
want=2 needle="unknown option '--threads'"
one_line bash "$CONTENTION" --txlc /bin/true --threads 2

exit "$fail"
