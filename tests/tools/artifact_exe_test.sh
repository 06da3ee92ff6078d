#!/bin/sh
# tests/tools/artifact_exe_test.sh TXLC MODELS_DIR - compile to an artifact and a
# standalone executable; both score a text exactly as the model directory does,
# generate the same text for the same seed, and run from another directory; the
# executable takes -m naming itself and refuses -m naming another model.
set -eu
TXLC=$1
M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
head -c 20000 "$M/kjv-char/valid.txt" > "$T/part.txt"
key() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\),*$/\1/p"; }

"$TXLC" compile "$M/kjv-char" -o "$T/kjv.txla" --qlen 64 --mem-len 64 2>/dev/null
"$TXLC" compile "$M/kjv-char" -o "$T/kjv" --qlen 64 --mem-len 64 --emit exe 2>/dev/null
dir=$("$TXLC" score "$M/kjv-char" "$T/part.txt" --json | key nll_sum)
art=$("$TXLC" score "$T/kjv.txla" "$T/part.txt" --json | key nll_sum)
exe=$(cd / && "$T/kjv" score "$T/part.txt" --json | key nll_sum)
echo "nll_sum: directory $dir, artifact $art, executable $exe"
[ "$dir" = "$art" ] && [ "$dir" = "$exe" ]

# -m naming the executable itself is taken (txlc's -m MODEL); naming another model is one line, exit 2.
mself=$(cd / && "$T/kjv" score -m "$T/kjv" "$T/part.txt" --json | key nll_sum)
[ "$mself" = "$dir" ] || { echo "score -m ITSELF: nll_sum $mself, expected $dir"; exit 1; }
rc=0
(cd / && "$T/kjv" score "$T/part.txt" --model="$M/kjv-words" > "$T/m.out" 2> "$T/m.err") || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l < "$T/m.err")" -eq 1 ] && [ ! -s "$T/m.out" ] &&
  grep -q "error: --model $M/kjv-words: kjv runs the model it carries ('kjv info' describes it)" "$T/m.err" ||
  { echo "score --model=OTHER in an executable: exit $rc, $(cat "$T/m.err")"; exit 1; }

g1=$("$TXLC" generate "$T/kjv.txla" --prompt "Joh3:16 For God" -n 40 --seed 3 2>/dev/null)
g2=$(cd / && "$T/kjv" generate --prompt "Joh3:16 For God" -n 40 --seed 3 2>/dev/null)
g3=$("$TXLC" generate "$M/kjv-char" --prompt "Joh3:16 For God" -n 40 --seed 3 2>/dev/null)
echo "generated: $g1"
[ "$g1" = "$g2" ] && [ "$g1" = "$g3" ]
[ "${#g1}" -ge 55 ]

# An unknown word of the prompt is warned about, as score does.
"$TXLC" generate "$M/kjv-words" --prompt "In the beginning zorblax" -n 3 --seed 1 2> "$T/gen.err" > /dev/null
grep -q "warning: --prompt: 1 unknown word, read as <unk>" "$T/gen.err"

# run: a state saved after one call resumes the stream exactly.
"$TXLC" run "$T/kjv.txla" --tokens "30 60 1 52 54 51" --no-logprob > "$T/whole.json"
"$TXLC" run "$T/kjv.txla" --tokens "30 60 1" --no-logprob --state-out "$T/s.state" > /dev/null
"$TXLC" run "$T/kjv.txla" --tokens "52 54 51" --no-logprob --state-in "$T/s.state" > "$T/rest.json"
[ "$(grep -o '"mlen_in":[0-9]*' "$T/rest.json")" = '"mlen_in":3' ]

# inspect reads an artifact like a model: the same optimized graph.
"$TXLC" inspect "$T/kjv.txla" --qlen 64 --mlen 64 > "$T/from_artifact.ir"
"$TXLC" inspect "$M/kjv-char" --qlen 64 --mlen 64 > "$T/from_model.ir"
cmp -s "$T/from_artifact.ir" "$T/from_model.ir" || { echo "inspect of the artifact differs from the model's"; exit 1; }
grep -q "rel_attention" "$T/from_artifact.ir"

# The executable serves the model it carries: a stream scored over HTTP (curl, 127.0.0.1) as score does.
if command -v curl > /dev/null; then
  (cd / && exec "$T/kjv" serve --port 0 --quiet > "$T/addr" 2> "$T/serve.err") &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$T/addr" 2> /dev/null && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$T/addr")
  [ -n "$url" ] || { echo "the executable's server did not start: $(cat "$T/serve.err")"; kill $pid; exit 1; }
  curl -sf -XPOST "$url/v1/streams" -d '{"id":"s"}' > /dev/null
  served=$(curl -sf -XPOST "$url/v1/streams/s/score" -d '{"text":"In the beginning God created the heaven"}')
  kill $pid
  wait $pid || true
  echo "served: $served"
  echo "$served" | grep -q '"tokens":38'
fi

# A corrupted copy of the executable's artifact is refused with one line.
cp "$T/kjv" "$T/bad"
size=$(wc -c < "$T/bad")
printf 'X' | dd of="$T/bad" bs=1 seek=$((size - 5000)) conv=notrunc 2>/dev/null
if "$T/bad" score "$T/part.txt" 2> "$T/err"; then echo "corrupt executable ran"; exit 1; fi
grep -q "corrupt: checksum" "$T/err"
echo ok
