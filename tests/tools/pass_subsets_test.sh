#!/bin/sh
# Every pass selection a user can make either compiles and conforms or is
# refused up front as a usage error (exit 2), never an internal error (3) or
# a crash: every conformance case (both conventions) under
#   - no passes, each pass alone, every ordered pair of distinct passes;
#   - the default pipeline with each pass removed;
# at f32 with the pipeline's own memory form; and, at bf16 and int8 with
# --memory kv and --memory hidden (the memory form and the state precision),
# each pass alone and every ordered pair with a pass that decides the memory
# form (cache-projected-memory, window-memory).
#   pass_subsets_test.sh TXLC PASSES_DEF CASES_DIR...
set -u
txlc=$1
def=$2
shift 2
cases=""
for d in "$@"; do
  for c in "$d"/*/; do [ -f "$c/case.json" ] && cases="$cases $c"; done
done
[ -n "$cases" ] || { echo "pass_subsets_test: no conformance cases under $*" >&2; exit 1; }
# Every registered pass, the precision passes included (--passes refuses them: exit 2).
passes=$(sed -n 's/^TXL_PASS([^,]*, *"\([^"]*\)".*/\1/p' "$def")
[ -n "$passes" ] || { echo "pass_subsets_test: no TXL_PASS entries in $def" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0 runs=0 refused=0

# run LABEL ARGS...: one conformance run; exit 0 or 2 passes the test.
run() {
  label=$1
  shift
  runs=$((runs + 1))
  # shellcheck disable=SC2086
  "$txlc" conformance $cases "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  case $rc in
    0) ;;
    2)
      refused=$((refused + 1))
      if [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
        echo "FAIL $label: refused with more than one stderr line:" >&2
        cat "$tmp/err" >&2
        failures=$((failures + 1))
      fi
      ;;
    *)
      echo "FAIL $label: exit $rc" >&2
      grep -v '^ok' "$tmp/out" >&2
      head -3 "$tmp/err" >&2
      failures=$((failures + 1))
      ;;
  esac
}

lists="none"
for a in $passes; do
  lists="$lists $a"
  for b in $passes; do
    [ "$a" = "$b" ] || lists="$lists $a,$b"
  done
done
for l in $lists; do
  run "--passes $l" --passes "$l"
done
for p in $passes; do
  run "--disable-pass $p" --disable-pass "$p"
  for prec in bf16 int8; do
    run "--disable-pass $p --precision $prec" --disable-pass "$p" --precision "$prec"
  done
done
form_lists="none"
for a in $passes; do
  form_lists="$form_lists $a"
  for b in cache-projected-memory window-memory; do
    [ "$a" = "$b" ] || form_lists="$form_lists $a,$b $b,$a"
  done
done
for l in $form_lists; do
  for prec in bf16 int8; do
    for mem in kv hidden; do
      run "--passes $l --precision $prec --memory $mem" --passes "$l" --precision "$prec" --memory "$mem"
    done
  done
done
echo "pass_subsets_test: $runs selections over $(echo $cases | wc -w) cases: $((runs - refused - failures)) conform, $refused refused (exit 2), $failures failed" >&2
[ "$failures" -eq 0 ]
