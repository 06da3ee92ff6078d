#!/bin/sh
# tests/tools/precision_int8_test.sh TXLC MODELS_DIR - the int8 quality gates (docs/PRECISION.md).
#
# 1. Both bundled models' validation texts, at their default setting and at
#    mem_len 0: the NLL per token at --precision int8 within 1 % of f32
#    (issue 21's gate), and not equal to it (int8 really ran).
# 2. An artifact compiled with --precision int8 records it, scores with the
#    same figure as the model run at int8 directly, and refuses --precision f32.
# 3. inspect --precision int8 shows a quantize op per linear weight, linears
#    reading them with f32 inputs and results, no bf16 convert of a weight, and
#    the state windows in bf16; the --json outputs report the precision.
# 4. The oneDNN executor runs int8 linears on txl:int8_linear, and without
#    AVX512-BF16 as oneDNN sees it (DNNL_MAX_CPU_ISA) int8 still runs, with
#    the same figure (the bf16 state is widened in software there).
# 5. An int8 state saved to a file is f32 there, and a run continued from it
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
    int8=$(nll "$M/$model" "$M/$model/valid.txt" $flags --precision int8)
    if [ -z "$f32" ] || [ -z "$int8" ]; then echo "FAIL $model mem $mem: score failed"; fail=1; continue; fi
    if awk -v a="$f32" -v b="$int8" 'BEGIN { d = b / a - 1; if (d < 0) d = -d;
         printf "%s", (d <= 0.01 && a != b) ? "" : "x" }' | grep -q x; then
      echo "FAIL $model mem $mem: nll_per_token f32 $f32, int8 $int8 (expected within 1 % and not equal)"; fail=1
    else
      awk -v m="$model" -v k="$mem" -v a="$f32" -v b="$int8" \
        'BEGIN { printf "ok %s mem %s: nll_per_token f32 %s, int8 %s (%+.4f %%)\n", m, k, a, b, 100 * (b / a - 1) }'
    fi
  done
done

# 2. The artifact.
"$TXLC" compile "$M/kjv-char" -o "$T/int8.txla" --precision int8 2>/dev/null || { echo "FAIL compile --precision int8"; fail=1; }
"$TXLC" info "$T/int8.txla" --json 2>/dev/null | grep -q '"precision": "int8"' ||
  { echo "FAIL info of the int8 artifact does not report precision int8"; fail=1; }
direct=$(nll "$M/kjv-char" "$M/kjv-char/valid.txt" --precision int8)
stored=$(nll "$T/int8.txla" "$M/kjv-char/valid.txt")
[ -n "$direct" ] && [ "$direct" = "$stored" ] ||
  { echo "FAIL the int8 artifact scores $stored, the model at int8 $direct"; fail=1; }
"$TXLC" score "$T/int8.txla" "$M/kjv-char/valid.txt" --precision f32 >/dev/null 2>"$T/err" &&
  { echo "FAIL the int8 artifact ran at --precision f32"; fail=1; }
grep -q 'is compiled for precision int8' "$T/err" || { echo "FAIL refusal: $(cat "$T/err")"; fail=1; }

# 3. inspect.
"$TXLC" inspect "$M/kjv-char" --precision int8 > "$T/int8.ir" 2>/dev/null || { echo "FAIL inspect --precision int8"; fail=1; }
grep -q ' = quantize(%[0-9]*) : f32\[' "$T/int8.ir" || { echo "FAIL no quantize ops at int8"; fail=1; }
grep -q 'linear(.*{.*out_dtype = "f32".*} : f32\[' "$T/int8.ir" || { echo "FAIL no f32-result linear at int8"; fail=1; }
awk '/= weight\(\)/ { w[$1] = 1 } /= convert\(/ { split($3, a, /[()]/); if (a[2] in w) bad = 1 } END { exit !bad }' "$T/int8.ir" &&
  { echo "FAIL a weight is converted to bf16 at int8"; fail=1; }
grep -q 'mem_window(.* : bf16\[' "$T/int8.ir" || { echo "FAIL the state windows are not bf16 at int8"; fail=1; }
"$TXLC" conformance "$M/../tests/conformance/tiny_base" --precision int8 --json 2>/dev/null | grep -q '"precision": "int8"' ||
  { echo "FAIL conformance --json lacks precision int8"; fail=1; }
"$TXLC" inspect "$M/kjv-char" --stats --format json --precision int8 2>/dev/null | grep -q '"precision": "int8"' ||
  { echo "FAIL inspect --stats --format json lacks precision int8"; fail=1; }

# 4. The kernel, and a CPU without AVX512-BF16 as oneDNN sees it.
"$TXLC" bench "$M/kjv-char" --qlen 1 --repetitions 1 --segments 2 --no-probe --precision int8 --profile 2>/dev/null |
  grep -q 'linear kernel txl:int8_linear' ||
  { echo "FAIL the int8 plan runs no txl:int8_linear"; fail=1; }
noBf16=$(DNNL_MAX_CPU_ISA=AVX512_CORE "$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --precision int8 --json 2>"$T/err" | key nll_per_token)
[ -n "$noBf16" ] && [ "$noBf16" = "$direct" ] ||
  { echo "FAIL int8 with DNNL_MAX_CPU_ISA=AVX512_CORE: $noBf16 against $direct; $(cat "$T/err")"; fail=1; }

# 5. The state at int8.
run() { "$TXLC" run "$M/kjv-char" --qlen 5 --precision int8 --no-logprob "$@" 2>/dev/null; }
run --tokens "30 60 1 5 7 9 11 13 15 17" > "$T/ab.json" &&
  run --tokens "30 60 1 5 7" --state-out "$T/s.st" > /dev/null &&
  run --tokens "9 11 13 15 17" --state-in "$T/s.st" > "$T/b.json" || { echo "FAIL run with an int8 state"; fail=1; }
grep -q '"dtype":"F32"' "$T/s.st" && ! grep -q '"dtype":"BF16"' "$T/s.st" ||
  { echo "FAIL the int8 state file is not f32"; fail=1; }
/usr/bin/python3 - "$T/ab.json" "$T/b.json" <<'PY' || { echo "FAIL the continued int8 run differs from one run"; fail=1; }
import json, sys
whole, second = (json.load(open(p))["hidden"] for p in sys.argv[1:])
sys.exit(0 if whole[5:] == second else 1)
PY
exit $fail
