#!/bin/sh
# tests/tools/precision_test.sh TXLC MODELS_DIR P - the quality gates of --precision P,
# P = bf16 or int8 (docs/PRECISION.md).
#
# 1. Both bundled models' validation texts, at their default setting and at
#    mem_len 0, and kjv-char at qlen 1 (the first 8,000 characters): the NLL
#    per token at P within the gate of f32 (issue 21's: 0.5 % for bf16, 1 %
#    for int8), and not equal to it (P really ran).
# 2. An artifact compiled with --precision P records it, scores with the same
#    figure as the model run at P directly, and refuses --precision f32.
# 3. inspect --precision P shows what P changes in the graph, and the state
#    windows in bf16; f32 shows no bf16 op. bf16: convert ops, f32-result
#    linears, a bf16-result key/value linear, the attention reading bf16
#    views. int8: a quantize op per linear weight, linears reading them with
#    f32 results, no bf16 convert of a weight. The --json outputs report P.
# 4. A CPU without AVX512-BF16 as oneDNN sees it (DNNL_MAX_CPU_ISA): bf16 is
#    one error line and a non-zero exit; int8 runs (its bf16 state widened in
#    software) with the same figure, and its plan runs txl:int8_linear (and
#    for segments, on a CPU with AVX512-VNNI, txl:int8_linear:vnni too).
# 5. A state saved at P is f32 in the file, and a run continued from it gives
#    the hidden states of one uninterrupted run, bit for bit.
set -u
TXLC=$1 M=$2 P=$3
case $P in
  bf16) gate=0.005 ;;
  int8) gate=0.01 ;;
  *) echo "precision_test.sh: expected bf16 or int8, got '$P'"; exit 2 ;;
esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }
key() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\),*$/\1/p"; }
nll() { "$TXLC" score "$@" --json 2>/dev/null | key nll_per_token; }

# 1. The gates; and at qlen 1 (one query row a segment: generation's shape,
#    which the attention runs on its row-wise path) on the first 8,000
#    characters of kjv-char.
head -c 8000 "$M/kjv-char/valid.txt" > "$T/short.txt"
for case in kjv-char:default kjv-char:0 kjv-words:default kjv-words:0 kjv-char:qlen1; do
  model=${case%%:*} mem=${case#*:} text="$M/$model/valid.txt" flags=""
  case $mem in
    default) ;;
    qlen1) flags="--qlen 1" text="$T/short.txt" ;;
    *) flags="--mem-len $mem" ;;
  esac
  f32=$(nll "$M/$model" "$text" $flags --precision f32)
  low=$(nll "$M/$model" "$text" $flags --precision "$P")
  if [ -z "$f32" ] || [ -z "$low" ]; then bad "$model mem $mem: score failed"; continue; fi
  if awk -v a="$f32" -v b="$low" -v g="$gate" 'BEGIN { d = b / a - 1; if (d < 0) d = -d;
       printf "%s", (d <= g && a != b) ? "" : "x" }' | grep -q x; then
    bad "$model mem $mem: nll_per_token f32 $f32, $P $low (expected within $gate of it and not equal)"
  else
    awk -v m="$model" -v k="$mem" -v a="$f32" -v b="$low" -v p="$P" \
      'BEGIN { printf "ok %s mem %s: nll_per_token f32 %s, %s %s (%+.4f %%)\n", m, k, a, p, b, 100 * (b / a - 1) }'
  fi
done

# 2. The artifact.
"$TXLC" compile "$M/kjv-char" -o "$T/low.txla" --precision "$P" 2>/dev/null || bad "compile --precision $P"
"$TXLC" info "$T/low.txla" --json 2>/dev/null | grep -q "\"precision\": \"$P\"" ||
  bad "info of the $P artifact does not report precision $P"
direct=$(nll "$M/kjv-char" "$M/kjv-char/valid.txt" --precision "$P")
stored=$(nll "$T/low.txla" "$M/kjv-char/valid.txt")
[ -n "$direct" ] && [ "$direct" = "$stored" ] || bad "the $P artifact scores $stored, the model at $P $direct"
"$TXLC" score "$T/low.txla" "$M/kjv-char/valid.txt" --precision f32 >/dev/null 2>"$T/err" &&
  bad "the $P artifact ran at --precision f32"
grep -q "is compiled for precision $P" "$T/err" || bad "refusal: $(cat "$T/err")"

# 3. inspect, and the --json outputs.
"$TXLC" inspect "$M/kjv-char" --precision "$P" > "$T/low.ir" 2>/dev/null || bad "inspect --precision $P"
grep -q 'linear(.*{.*out_dtype = "f32".*} : f32\[' "$T/low.ir" || bad "no f32-result linear at $P"
grep -q 'mem_window(.* : bf16\[' "$T/low.ir" || bad "the state windows are not bf16 at $P"
if [ "$P" = bf16 ]; then
  grep -q 'convert(%[0-9]*) {dtype = "bf16"} : bf16\[' "$T/low.ir" || bad "no convert ops at bf16"
  grep -q 'linear(.*{out_dtype = "bf16"} : bf16\[' "$T/low.ir" || bad "no bf16-result linear for the keys and values"
  grep -q 'rel_attention(' "$T/low.ir" && ! grep -q 'reshape(.* : bf16\[' "$T/low.ir" &&
    bad "rel_attention reads no bf16 keys and values"
else
  grep -q ' = quantize(%[0-9]*) : f32\[' "$T/low.ir" || bad "no quantize ops at int8"
  awk '/= weight\(\)/ { w[$1] = 1 } /= convert\(/ { split($3, a, /[()]/); if (a[2] in w) bad = 1 } END { exit !bad }' \
    "$T/low.ir" && bad "a weight is converted to bf16 at int8"
fi
"$TXLC" inspect "$M/kjv-char" > "$T/f32.ir" 2>/dev/null || bad "inspect"
grep -q 'convert\|bf16\|quantize' "$T/f32.ir" && bad "the f32 graph has bf16 or int8 ops"
"$TXLC" conformance "$M/../tests/conformance/tiny_base" --precision "$P" --json 2>/dev/null |
  grep -q "\"precision\": \"$P\"" || bad "conformance --json lacks precision $P"
"$TXLC" inspect "$M/kjv-char" --stats --format json --precision "$P" 2>/dev/null | grep -q "\"precision\": \"$P\"" ||
  bad "inspect --stats --format json lacks precision $P"
"$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --json 2>/dev/null | grep -q '"precision": "f32"' ||
  bad "score --json lacks precision f32"

# 4. A CPU without AVX512-BF16, as oneDNN sees it.
if [ "$P" = bf16 ]; then
  DNNL_MAX_CPU_ISA=AVX512_CORE "$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --precision bf16 >"$T/out" 2>"$T/err" &&
    bad "bf16 ran with DNNL_MAX_CPU_ISA=AVX512_CORE"
  [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q 'bf16 needs a CPU with AVX512-BF16' "$T/err" && [ ! -s "$T/out" ] ||
    bad "refusal without AVX512-BF16: $(cat "$T/err")"
else
  "$TXLC" bench "$M/kjv-char" --qlen 1 --repetitions 1 --segments 2 --no-probe --precision int8 --profile 2>/dev/null |
    grep -q 'linear kernel txl:int8_linear' || bad "the int8 plan runs no txl:int8_linear"
  # Segments quantize their activations on a CPU with AVX512-VNNI; the first
  # layer's projections (reading the embedding) keep f32 activations
  # (kjv-words), unless they are lookups in projected tables
  # (fold-embedding-projections: kjv-char's 73 symbols against 128 inputs).
  if grep -qw avx512_vnni /proc/cpuinfo; then
    for model in kjv-char kjv-words; do
      "$TXLC" bench "$M/$model" --qlen 8 --repetitions 1 --segments 2 --no-probe --precision int8 --profile \
        2>/dev/null > "$T/profile" || bad "bench $model --qlen 8 --precision int8 --profile"
      grep -q 'linear kernel txl:int8_linear:vnni' "$T/profile" || bad "the $model int8 segment plan runs no txl:int8_linear:vnni"
      if [ $model = kjv-words ]; then
        grep -Eq 'linear kernel txl:int8_linear( \(|$)' "$T/profile" || bad "the $model int8 segment plan runs no txl:int8_linear"
      else
        grep -Eq 'linear kernel txl:int8_linear( \(|$)' "$T/profile" && bad "the $model int8 segment plan runs txl:int8_linear"
        grep -Eq '^ +[0-9.]+ +[0-9.]+ +3 +embedding ' "$T/profile" || bad "the $model int8 segment plan has no 3 embedding steps"
      fi
    done
  fi
  noBf16=$(DNNL_MAX_CPU_ISA=AVX512_CORE "$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --precision int8 --json \
    2>"$T/err" | key nll_per_token)
  [ -n "$noBf16" ] && [ "$noBf16" = "$direct" ] ||
    bad "int8 with DNNL_MAX_CPU_ISA=AVX512_CORE: $noBf16 against $direct; $(cat "$T/err")"
fi

# 5. The state.
run() { "$TXLC" run "$M/kjv-char" --qlen 5 --precision "$P" --no-logprob "$@" 2>/dev/null; }
run --tokens "30 60 1 5 7 9 11 13 15 17" > "$T/ab.json" &&
  run --tokens "30 60 1 5 7" --state-out "$T/s.st" > /dev/null &&
  run --tokens "9 11 13 15 17" --state-in "$T/s.st" > "$T/b.json" || bad "run with a $P state"
grep -q '"dtype":"F32"' "$T/s.st" && ! grep -q '"dtype":"BF16"' "$T/s.st" || bad "the $P state file is not f32"
/usr/bin/python3 - "$T/ab.json" "$T/b.json" <<'PY' || bad "the continued $P run differs from one run"
import json, sys
whole, second = (json.load(open(p))["hidden"] for p in sys.argv[1:])
sys.exit(0 if whole[5:] == second else 1)
PY
exit $fail
