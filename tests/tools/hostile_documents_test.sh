#!/bin/sh
# tests/tools/hostile_documents_test.sh TXLC MODELS_DIR CASE - score --documents (and import) against hostile
# inputs and outputs.
#
#   ids        JSON lines past the bounds of driver/documents.h: an "id" nested
#              100,000 deep, an "id" of 1.1 million objects, a 70 MB "id" of
#              zeros, an "id" of 5,000 bytes: each one error line (file, line,
#              expected, found), exit 3, within 2 GiB, nothing written
#   resume     --resume against the output of another model, other options,
#              another corpus, or with no record of its run: refused with one
#              line naming the record's field, the output untouched; a
#              matching --resume completes it as one run does
#   exclusive  FILE.partial locked by another process: refused before anything
#              is read or truncated; FILE.partial replaced during a run: the run
#              fails and renames nothing into place
#   checkpoint a 44 KB torch checkpoint whose memo fans one module out to four
#              million parameter names (hostile_checkpoint.py): import refuses it
#              with one line as the module walk passes its budget, within 2 GiB
#   ties       tests/data/checkpoints/hf_tiny's state dict with 20,000 more names
#              for its first tensor's storage (hostile_checkpoint.py ties): import
#              succeeds within 60 s and 2 GiB, the ties in one note with their
#              count (not a note per name), the model as the plain checkpoint's
set -u
TXLC=$1
M=$2
CASE=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect CODE PATTERN ARGS...: exit CODE, stderr one line matching PATTERN, peak RSS at most 2 GiB.
expect() {
  code=$1; pattern=$2; shift 2
  /usr/bin/time -f '%M' -o "$T/rss" "$TXLC" "$@" > "$T/out" 2> "$T/err"
  got=$?
  [ "$got" -eq "$code" ] || fail "$*: exit $got, expected $code: $(head -c 600 "$T/err")"
  [ "$(wc -l < "$T/err")" -eq 1 ] || fail "$*: expected one line on stderr, got: $(head -c 600 "$T/err")"
  grep -q -- "$pattern" "$T/err" || fail "$*: expected /$pattern/, got: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "$*: stdout not empty"
  rss=$(tail -n 1 "$T/rss")
  [ "$rss" -le 2097152 ] || fail "$*: peak RSS $rss KiB, over 2 GiB"
  echo "ok ($rss KiB): $(cat "$T/err")"
}
# A small corpus of the bundled validation text.
sed -n '1,12p' "$M/kjv-char/valid.txt" | cut -c1-80 > "$T/docs.txt"

case "$CASE" in
ids)
  # 100,000 nested arrays as the id.
  awk 'BEGIN { printf "{\"id\": "; for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]"; print ", \"text\": \"In the beginning\"}" }' > "$T/deep.jsonl"
  expect 3 'deep.jsonl: line 1: JSON nested deeper than 64 levels, expected at most 64' \
    score "$M/kjv-char" --documents "$T/deep.jsonl" -o "$T/o.jsonl"
  # 1.1 million empty objects as the id (3.3 MB).
  awk 'BEGIN { printf "{\"text\": \"In the beginning\"}\n{\"id\": [{}"; for (i = 0; i < 1100000; i++) printf ",{}"; print "], \"text\": \"x\"}" }' > "$T/wide.jsonl"
  expect 3 'wide.jsonl: line 2: more than 1048576 JSON values, expected at most 1048576 in a line' \
    score "$M/kjv-char" --documents "$T/wide.jsonl" -o "$T/o.jsonl"
  # A 70 MB id of zeros: refused by its length before it is parsed.
  { printf '{"id": ['; head -c 35000000 /dev/zero | tr '\0' '0' | sed 's/0/0,/g'; printf '0], "text": "x"}\n'; } > "$T/long.jsonl"
  expect 3 'long.jsonl: line 1: a JSON line of [0-9]* bytes, expected at most 67108864' \
    score "$M/kjv-char" --documents "$T/long.jsonl" -o "$T/o.jsonl"
  # A 5,000-byte id: too large to repeat in every output line.
  awk 'BEGIN { printf "{\"id\": \""; for (i = 0; i < 5000; i++) printf "a"; print "\", \"text\": \"In the beginning\"}" }' > "$T/big.jsonl"
  expect 3 'big.jsonl: line 1: an "id" of 5002 bytes as JSON, expected at most 4096' \
    score "$M/kjv-char" --documents "$T/big.jsonl" -o "$T/o.jsonl"
  [ -e "$T/o.jsonl" ] || [ -e "$T/o.jsonl.partial" ] && fail "an output was written"
  # The same bounds hold for an earlier output read by --resume.
  "$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" -o "$T/o.jsonl" 2>/dev/null || fail "a plain run"
  cp "$T/deep.jsonl" "$T/o.jsonl.partial"
  expect 3 'o.jsonl.partial: line 1: JSON nested deeper than 64 levels' \
    score "$M/kjv-char" --documents "$T/docs.txt" -o "$T/o.jsonl" --resume
  cmp -s "$T/deep.jsonl" "$T/o.jsonl.partial" || fail "--resume changed FILE.partial"
  ;;
resume)
  "$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" --qlen 32 -o "$T/whole.jsonl" 2>/dev/null || fail "the whole run"
  [ -s "$T/whole.jsonl.run.json" ] || fail "no record beside the output"
  # An interrupted run of the same corpus: its first 5 lines and its record.
  head -n 5 "$T/whole.jsonl" > "$T/o.jsonl.partial"
  cp "$T/whole.jsonl.run.json" "$T/o.jsonl.run.json"
  cp "$T/o.jsonl.partial" "$T/kept"
  expect 3 'o.jsonl.run.json: /model: expected this run.s model [0-9a-f]*, found "[0-9a-f]*" (.*o.jsonl.partial is another run.s; remove it or drop --resume)' \
    score "$M/kjv-words" --documents "$T/docs.txt" --qlen 32 -o "$T/o.jsonl" --resume
  expect 3 'o.jsonl.run.json: /options/qlen: expected this run.s 16, found 32 (' \
    score "$M/kjv-char" --documents "$T/docs.txt" --qlen 16 -o "$T/o.jsonl" --resume
  sed 's/e/E/g' "$T/docs.txt" > "$T/other.txt"  # the same ids (line numbers), other texts
  expect 3 'o.jsonl.run.json: /corpus: expected this run.s corpus fingerprint [0-9a-f]*, found' \
    score "$M/kjv-char" --documents "$T/other.txt" --qlen 32 -o "$T/o.jsonl" --resume
  mv "$T/o.jsonl.run.json" "$T/record"
  expect 3 'o.jsonl.run.json: expected the record of the run that wrote .*o.jsonl.partial (its model, corpus and options), found none' \
    score "$M/kjv-char" --documents "$T/docs.txt" --qlen 32 -o "$T/o.jsonl" --resume
  cmp -s "$T/kept" "$T/o.jsonl.partial" || fail "a refused --resume changed FILE.partial"
  [ -e "$T/o.jsonl" ] && fail "a refused --resume wrote FILE"
  mv "$T/record" "$T/o.jsonl.run.json"
  "$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" --qlen 32 -o "$T/o.jsonl" --resume --summary "$T/s.json" ||
    fail "a matching --resume"
  cmp -s "$T/whole.jsonl" "$T/o.jsonl" || fail "--resume does not give the whole run's lines"
  grep -q '"resumed": 5' "$T/s.json" || fail "expected 5 resumed documents: $(cat "$T/s.json")"
  echo "ok: a matching --resume"
  ;;
exclusive)
  printf 'earlier lines\n' > "$T/o.jsonl.partial"
  # Another process holds the lock until told to let go.
  ( flock 9; while [ ! -e "$T/release" ]; do sleep 0.05; done ) 9>> "$T/o.jsonl.partial" &
  holder=$!
  for i in $(seq 1 100); do flock -n "$T/o.jsonl.partial" true || break; sleep 0.05; done
  expect 3 'o.jsonl.partial: expected no other process writing it, found it locked by another run' \
    score "$M/kjv-char" --documents "$T/docs.txt" -o "$T/o.jsonl"
  touch "$T/release"
  wait "$holder"
  [ "$(cat "$T/o.jsonl.partial")" = "earlier lines" ] || fail "a refused run changed the locked FILE.partial"
  rm -f "$T/o.jsonl.partial"
  # A run long enough to replace its FILE.partial midway.
  for i in 1 2; do cut -c1-60 "$M/kjv-char/valid.txt"; done > "$T/big.txt"
  "$TXLC" score "$M/kjv-char" --documents "$T/big.txt" --batch 4 -o "$T/r.jsonl" 2> "$T/err" &
  job=$!
  for i in $(seq 1 600); do [ -s "$T/r.jsonl.partial" ] && break; sleep 0.02; done
  printf 'planted\n' > "$T/planted"
  mv "$T/planted" "$T/r.jsonl.partial"
  wait "$job"
  code=$?
  [ "$code" -eq 3 ] || fail "a run whose FILE.partial was replaced: exit $code: $(cat "$T/err")"
  grep -q 'r.jsonl.partial: expected the file this run wrote, found another file in its place' "$T/err" ||
    fail "no line says FILE.partial was replaced: $(cat "$T/err")"
  [ -e "$T/r.jsonl" ] && fail "the planted file was renamed into place"
  [ "$(cat "$T/r.jsonl.partial")" = "planted" ] || fail "the planted file was changed"
  echo "ok: $(cat "$T/err")"
  ;;
checkpoint)
  /usr/bin/python3 "$(dirname "$0")/hostile_checkpoint.py" fan "$T/fan.pt" || fail "cannot write the checkpoint"
  expect 3 'fan.pt: fan/data.pkl: module "[0-9]*": the module walk needs more than [0-9]* units (values, views, names), expected at most 8 a byte of the file' \
    import "$T/fan.pt" -o "$T/imported"
  [ -e "$T/imported" ] && fail "import wrote an output"
  ;;
ties)
  hf=$(dirname "$0")/../data/checkpoints/hf_tiny
  mkdir "$T/ties"
  cp "$hf/config.json" "$T/ties/"
  /usr/bin/python3 "$(dirname "$0")/hostile_checkpoint.py" ties "$hf/pytorch_model.bin" "$T/ties/pytorch_model.bin" 20000 ||
    fail "cannot write the checkpoint"
  "$TXLC" import "$hf/pytorch_model.bin" -o "$T/plain" 2> "$T/err" || fail "import of $hf: $(cat "$T/err")"
  start=$(date +%s)
  timeout 60 /usr/bin/time -f '%M' -o "$T/rss" "$TXLC" import "$T/ties/pytorch_model.bin" -o "$T/imported" \
    > "$T/out" 2> "$T/err"
  code=$?
  took=$(( $(date +%s) - start ))
  [ "$code" -eq 0 ] || fail "import exited $code after $took s: $(head -c 600 "$T/err")"
  # The one tie of hf_tiny (its output layer and its embedding) and the 20,000 added.
  [ "$(wc -l < "$T/err")" -le 3 ] || fail "$(wc -l < "$T/err") lines ($(wc -c < "$T/err") bytes) on stderr: $(head -c 600 "$T/err")"
  [ "$(wc -c < "$T/err")" -le 600 ] || fail "$(wc -c < "$T/err") bytes on stderr: $(head -c 600 "$T/err")"
  [ "$(grep -c 'tied\|shares its storage' "$T/err")" -eq 1 ] || fail "expected one note about ties: $(cat "$T/err")"
  grep -q '^txlc: note: .*/ties/pytorch_model.bin: 20001 tensors share their storage with an earlier one (tied weights), each stored once; the first: ' "$T/err" ||
    fail "no note with the count of ties: $(cat "$T/err")"
  grep -q '^txlc: imported 29 tensors ' "$T/err" || fail "expected 29 tensors imported: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "stdout not empty"
  rss=$(tail -n 1 "$T/rss")
  [ "$rss" -le 2097152 ] || fail "peak RSS $rss KiB, over 2 GiB"
  cmp -s "$T/plain/model.safetensors" "$T/imported/model.safetensors" ||
    fail "the weights differ from the plain checkpoint's"
  echo "ok ($rss KiB, $took s): $(cat "$T/err")"
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo "ok: $CASE"
