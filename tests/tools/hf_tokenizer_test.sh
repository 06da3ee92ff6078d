#!/bin/sh
# tests/tools/hf_tokenizer_test.sh TXLC CHECKPOINTS_DIR - the word tokenizer a Hugging Face vocabulary gets, end to end.
#
# hf_tiny's vocab.pkl: score splits raw text as transformers does (3 of 19
# words <unk>); --tokenizer whitespace splits on spaces (6 of 13 <unk>);
# `txlc import` and `txlc compile` keep the choice.
set -u
TXLC=$1
C=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

mkdir "$T/hf"
cp "$C/hf_tiny/config.json" "$C/hf_tiny/pytorch_model.bin" "$C/hf_tiny/vocab.pkl" "$T/hf/"
printf 'The city, and the house.\nIn 1,000 years the river'"'"'s song.\n' > "$T/t.txt"

unk() {  # unk WHAT EXPECTED ARGS...: `txlc score ARGS` reports EXPECTED <unk> tokens
  what=$1; want=$2; shift 2
  got=$("$TXLC" score "$@" --max-unk-fraction 1 2> "$T/err" | sed -n 's/^unk_tokens //p')
  if [ "$got" = "$want" ]; then echo "ok: $what"; else
    echo "FAIL: $what: unk_tokens '$got', expected $want; $(head -c 300 "$T/err")"; fail=$((fail + 1))
  fi
}

unk "vocab.pkl: hf by default" 3 "$T/hf" "$T/t.txt"
unk "--tokenizer whitespace" 6 "$T/hf" "$T/t.txt" --tokenizer whitespace
"$TXLC" import "$T/hf" -o "$T/imported" 2>/dev/null || { echo "FAIL: import"; fail=$((fail + 1)); }
if [ -f "$T/imported/tokenizer_config.json" ]; then echo "ok: import writes tokenizer_config.json"; else
  echo "FAIL: import wrote no tokenizer_config.json"; fail=$((fail + 1))
fi
unk "imported folder: hf" 3 "$T/imported" "$T/t.txt"
rm -f "$T/imported/tokenizer_config.json"
unk "vocab.txt alone: whitespace" 6 "$T/imported" "$T/t.txt"
unk "vocab.txt alone, --tokenizer hf" 3 "$T/imported" "$T/t.txt" --tokenizer hf
"$TXLC" compile "$T/hf" -o "$T/a.txla" 2>/dev/null || { echo "FAIL: compile"; fail=$((fail + 1)); }
unk "artifact keeps hf" 3 "$T/a.txla" "$T/t.txt"
unk "artifact, --tokenizer whitespace" 6 "$T/a.txla" "$T/t.txt" --tokenizer whitespace

echo "$fail failed"
[ "$fail" -eq 0 ]
