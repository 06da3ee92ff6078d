#!/bin/sh
# tests/tools/precision_test.sh TXLC MODELS_DIR - the bf16 quality gates (docs/PRECISION.md).
#
# 1. Both bundled models' validation texts, at their default setting and at
#    mem_len 0: the NLL per token at --precision bf16 within 0.5 % of f32
#    (issue 21's gate), and not equal to it (bf16 really ran).
# 2. An artifact compiled with --precision bf16 records it, scores with the
#    same figure as the model run at bf16 directly, and refuses --precision f32.
# 3. inspect --precision bf16 shows the convert ops and f32-result linears,
#    and the state windows in bf16 (the key/value linear writing bf16, the
#    attention reading bf16 views); f32 shows none.
#    The --json outputs report the precision.
# 4. bf16 on a CPU whose oneDNN ISA lacks AVX512-BF16 (DNNL_MAX_CPU_ISA) is one
#    error line and a non-zero exit.
# 5. A bf16 state saved to a file is f32 there, and a run continued from it
#    gives the hidden states of one uninterrupted run, bit for bit.
set -u
TXLC=$1 M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
key() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\),*$/\1/p"; }
nll() { "$TXLC" score "$@" --json 2>/dev/null | key nll_per_token; }

for model in kjv-char kjv-words; do
  for mem in default 0; do
    flags=""
    [ "$mem" = default ] || flags="--mem-len $mem"
    f32=$(nll "$M/$model" "$M/$model/valid.txt" $flags --precision f32)
    bf16=$(nll "$M/$model" "$M/$model/valid.txt" $flags --precision bf16)
    if [ -z "$f32" ] || [ -z "$bf16" ]; then echo "FAIL $model mem $mem: score failed"; fail=1; continue; fi
    if awk -v a="$f32" -v b="$bf16" 'BEGIN { d = b / a - 1; if (d < 0) d = -d;
         printf "%s", (d <= 0.005 && a != b) ? "" : "x" }' | grep -q x; then
      echo "FAIL $model mem $mem: nll_per_token f32 $f32, bf16 $bf16 (expected within 0.5 % and not equal)"; fail=1
    else
      awk -v m="$model" -v k="$mem" -v a="$f32" -v b="$bf16" \
        'BEGIN { printf "ok %s mem %s: nll_per_token f32 %s, bf16 %s (%+.4f %%)\n", m, k, a, b, 100 * (b / a - 1) }'
    fi
  done
done

# 2. The artifact.
"$TXLC" compile "$M/kjv-char" -o "$T/bf16.txla" --precision bf16 2>/dev/null || { echo "FAIL compile --precision bf16"; fail=1; }
"$TXLC" info "$T/bf16.txla" --json 2>/dev/null | grep -q '"precision": "bf16"' ||
  { echo "FAIL info of the bf16 artifact does not report precision bf16"; fail=1; }
direct=$(nll "$M/kjv-char" "$M/kjv-char/valid.txt" --precision bf16)
stored=$(nll "$T/bf16.txla" "$M/kjv-char/valid.txt")
[ -n "$direct" ] && [ "$direct" = "$stored" ] ||
  { echo "FAIL the bf16 artifact scores $stored, the model at bf16 $direct"; fail=1; }
"$TXLC" score "$T/bf16.txla" "$M/kjv-char/valid.txt" --precision f32 >/dev/null 2>"$T/err" &&
  { echo "FAIL the bf16 artifact ran at --precision f32"; fail=1; }
grep -q 'is compiled for precision bf16' "$T/err" || { echo "FAIL refusal: $(cat "$T/err")"; fail=1; }

# 3. inspect.
"$TXLC" inspect "$M/kjv-char" --precision bf16 > "$T/bf16.ir" 2>/dev/null || { echo "FAIL inspect --precision bf16"; fail=1; }
grep -q 'convert(%[0-9]*) {dtype = "bf16"} : bf16\[' "$T/bf16.ir" || { echo "FAIL no convert ops at bf16"; fail=1; }
grep -q 'linear(.*{.*out_dtype = "f32".*} : f32\[' "$T/bf16.ir" || { echo "FAIL no f32-result linear at bf16"; fail=1; }
grep -q 'linear(.*{out_dtype = "bf16"} : bf16\[' "$T/bf16.ir" || { echo "FAIL no bf16-result linear for the keys and values"; fail=1; }
grep -q 'mem_window(.* : bf16\[' "$T/bf16.ir" || { echo "FAIL the state windows are not bf16"; fail=1; }
grep -q 'rel_attention(' "$T/bf16.ir" && ! grep -q 'reshape(.* : bf16\[' "$T/bf16.ir" &&
  { echo "FAIL rel_attention reads no bf16 keys and values"; fail=1; }
"$TXLC" inspect "$M/kjv-char" > "$T/f32.ir" 2>/dev/null || { echo "FAIL inspect"; fail=1; }
grep -q 'convert\|bf16' "$T/f32.ir" && { echo "FAIL the f32 graph has bf16 ops"; fail=1; }

# The --json outputs that report the setting carry the precision.
"$TXLC" conformance "$M/../tests/conformance/tiny_base" --precision bf16 --json 2>/dev/null | grep -q '"precision": "bf16"' ||
  { echo "FAIL conformance --json lacks precision bf16"; fail=1; }
"$TXLC" inspect "$M/kjv-char" --stats --format json --precision bf16 2>/dev/null | grep -q '"precision": "bf16"' ||
  { echo "FAIL inspect --stats --format json lacks precision bf16"; fail=1; }
"$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --json 2>/dev/null | grep -q '"precision": "f32"' ||
  { echo "FAIL score --json lacks precision f32"; fail=1; }

# 4. A CPU without AVX512-BF16, as oneDNN sees it.
if DNNL_MAX_CPU_ISA=AVX512_CORE "$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --precision bf16 >"$T/out" 2>"$T/err"; then
  echo "FAIL bf16 ran with DNNL_MAX_CPU_ISA=AVX512_CORE"; fail=1
fi
[ "$(wc -l < "$T/err")" -eq 1 ] && grep -q 'bf16 needs a CPU with AVX512-BF16' "$T/err" && [ ! -s "$T/out" ] ||
  { echo "FAIL refusal without AVX512-BF16: $(cat "$T/err")"; fail=1; }
# 5. The state at bf16.
run() { "$TXLC" run "$M/kjv-char" --qlen 5 --precision bf16 --no-logprob "$@" 2>/dev/null; }
run --tokens "30 60 1 5 7 9 11 13 15 17" > "$T/ab.json" &&
  run --tokens "30 60 1 5 7" --state-out "$T/s.st" > /dev/null &&
  run --tokens "9 11 13 15 17" --state-in "$T/s.st" > "$T/b.json" || { echo "FAIL run with a bf16 state"; fail=1; }
grep -q '"dtype":"F32"' "$T/s.st" && ! grep -q '"dtype":"BF16"' "$T/s.st" ||
  { echo "FAIL the bf16 state file is not f32"; fail=1; }
/usr/bin/python3 - "$T/ab.json" "$T/b.json" <<'PY' || { echo "FAIL the continued bf16 run differs from one run"; fail=1; }
import json, sys
whole, second = (json.load(open(p))["hidden"] for p in sys.argv[1:])
sys.exit(0 if whole[5:] == second else 1)
PY
exit $fail
