#!/bin/sh
# tests/tools/model_forms_test.sh TXLC MODELS_DIR CHECKPOINTS_DIR - every form `txlc import` accepts works as MODEL.
#
# A checkpoint file (Hugging Face's pytorch_model.bin, zip and legacy; the
# authors' whole-model model.pt) and safetensors weights with config.json
# beside them give, in score, generate, compile and bench, what the model
# folder (or the folder txlc import writes from them) gives.
set -u
TXLC=$1
M=$2
C=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

same() {  # same WHAT FILE1 FILE2
  if cmp -s "$2" "$3"; then echo "ok: $1"; else
    echo "FAIL: $1"; diff "$2" "$3" | head -10; fail=$((fail + 1))
  fi
}
run() {  # run OUT ARGS...: txlc ARGS > OUT, failing the test on a non-zero exit
  out=$1; shift
  "$TXLC" "$@" > "$out" 2> "$T/err" || { echo "FAIL: txlc $* (exit $?): $(head -c 400 "$T/err")"; fail=$((fail + 1)); }
}

printf 'the , . of and in to a = the of the\n' > "$T/words.txt"
printf '1 5 9 2 7 3 8 4 6 1 0 2\n' > "$T/ids.txt"

# Hugging Face's pytorch_model.bin (zip and legacy) as MODEL == its folder == the imported folder.
for d in hf_tiny hf_tiny_legacy; do
  run "$T/$d.imported.out" import "$C/$d" -o "$T/$d.imported"
  run "$T/$d.dir" score "$C/$d" "$T/words.txt"
  run "$T/$d.bin" score "$C/$d/pytorch_model.bin" "$T/words.txt"
  run "$T/$d.imp" score "$T/$d.imported" "$T/words.txt"
  same "score $d/pytorch_model.bin == score $d" "$T/$d.dir" "$T/$d.bin"
  same "score $d/pytorch_model.bin == score (import $d)" "$T/$d.imp" "$T/$d.bin"
done
run "$T/gen.bin" generate "$C/hf_tiny/pytorch_model.bin" --prompt "the" -n 5 --greedy
run "$T/gen.dir" generate "$C/hf_tiny" --prompt "the" -n 5 --greedy
same "generate hf_tiny/pytorch_model.bin == generate hf_tiny" "$T/gen.dir" "$T/gen.bin"
run "$T/compile.out" compile "$C/hf_tiny/pytorch_model.bin" -o "$T/hf.txla"
run "$T/hf.txla.out" score "$T/hf.txla" "$T/words.txt"
same "compile hf_tiny/pytorch_model.bin, score the artifact == score hf_tiny" "$T/hf_tiny.dir" "$T/hf.txla.out"
run "$T/bench.out" bench "$C/hf_tiny/pytorch_model.bin" --segments 1 --warmup 0 --repetitions 1 --format csv

# The authors' model.pt (its spec from the pickled module) == the folder txlc import writes from it.
run "$T/pt.imported.out" import "$C/authors_model/model.pt" -o "$T/pt.imported"
run "$T/pt.file" score "$C/authors_model/model.pt" "$T/ids.txt" --ids
run "$T/pt.imp" score "$T/pt.imported" "$T/ids.txt" --ids
same "score model.pt == score (import model.pt)" "$T/pt.imp" "$T/pt.file"
run "$T/pt.info" info "$C/authors_model/model.pt"
grep -q "(checkpoint)" "$T/pt.info" || { echo "FAIL: info model.pt names the form checkpoint"; fail=$((fail + 1)); }

# Safetensors weights with config.json (and the vocabulary) beside them == the folder.
head -c 3000 "$M/kjv-char/valid.txt" > "$T/char.txt"
run "$T/st.file" score "$M/kjv-char/model.safetensors" "$T/char.txt"
run "$T/st.dir" score "$M/kjv-char" "$T/char.txt"
same "score kjv-char/model.safetensors == score kjv-char" "$T/st.dir" "$T/st.file"

[ "$fail" -eq 0 ] && echo "all model forms agree"
[ "$fail" -eq 0 ]
