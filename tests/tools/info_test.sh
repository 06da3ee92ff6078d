#!/bin/sh
# tests/tools/info_test.sh TXLC MODELS_DIR - `txlc info` on every model form:
# a model directory, a spec file without weights, safetensors weights with
# config.json beside them, an artifact, a standalone executable named as a
# model and the executable's own `info`; the model id
# is the same for the directory and what was compiled from it, the artifact
# names the txlc that compiled it and its stored graphs, and a standalone
# executable's --version names its model; compile --random-weights on a
# directory says that its weights are not read.
set -eu
TXLC=$1
M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
key() { sed -n "s/^  \"$1\": \"*\([^\",]*\)\"*,*$/\1/p"; }

"$TXLC" compile "$M/kjv-char" -o "$T/kjv.txla" 2>/dev/null
"$TXLC" compile "$M/kjv-char" -o "$T/kjv" --emit exe 2>/dev/null
"$TXLC" info "$M/kjv-char" --json > "$T/dir.json"
"$TXLC" info "$T/kjv.txla" --json > "$T/art.json"
"$TXLC" info "$T/kjv" --json > "$T/exe.json"
"$T/kjv" info --json > "$T/own.json"
for f in dir art exe own; do echo "$f: $(key form < "$T/$f.json") $(key model_id < "$T/$f.json")"; done
[ "$(key form < "$T/dir.json")" = directory ]
[ "$(key form < "$T/art.json")" = artifact ]
[ "$(key form < "$T/exe.json")" = executable ]
[ "$(key form < "$T/own.json")" = embedded ]
id=$(key model_id < "$T/dir.json")
[ ${#id} -eq 16 ]
for f in art exe own; do [ "$(key model_id < "$T/$f.json")" = "$id" ]; done
[ "$(key parameters < "$T/dir.json")" = "$(key parameters < "$T/art.json")" ]
[ "$(key precision < "$T/art.json")" = f32 ]
[ "$(key semantics < "$T/art.json")" = authors ]
[ "$(key txlc_version < "$T/art.json")" = "$("$TXLC" --version | sed -n 's/^txlc \([^ ]*\) .*/\1/p')" ]
grep -q '"role": "score"' "$T/art.json"
grep -q '"size": 73' "$T/dir.json"

# A spec file without weights: the spec, no weights read.
"$TXLC" info "$M/kjv-char/config.json" > "$T/spec.txt"
grep -q "^architecture 4 layers" "$T/spec.txt"
grep -q "^weights      none read" "$T/spec.txt"

# Safetensors weights with config.json beside them: that form, the directory's model id.
"$TXLC" info "$M/kjv-char/model.safetensors" --json > "$T/st.json"
echo "st: $(key form < "$T/st.json") $(key model_id < "$T/st.json")"
[ "$(key form < "$T/st.json")" = safetensors ]
[ "$(key model_id < "$T/st.json")" = "$id" ]
"$TXLC" info "$M/kjv-char/model.safetensors" | grep -q "^model        .*model.safetensors (safetensors)$"
# A spec file with --weights is a spec, whatever its weights.
[ "$("$TXLC" info "$M/kjv-char/config.json" --weights "$M/kjv-char/model.safetensors" --json | key form)" = spec ]

# Text form of an artifact: the compiled-with line and one line per graph.
"$TXLC" info "$T/kjv.txla" > "$T/art.txt"
grep -q "^compiled     by txlc" "$T/art.txt"
[ "$(grep -c '^  graph' "$T/art.txt")" -ge 2 ]

# --random-weights on a directory with weights: said on stderr and in --json; another model id.
"$TXLC" compile "$M/kjv-char" --random-weights -o "$T/random.txla" --json > "$T/random.json" 2> "$T/random.err"
grep -q "note: --random-weights: .*model.safetensors is not read" "$T/random.err"
grep -q '"random_weights": true' "$T/random.json"
[ "$("$TXLC" info "$T/random.txla" --json | key model_id)" != "$id" ]

"$T/kjv" --version > "$T/version.txt"
grep -q "^standalone executable of model $id " "$T/version.txt"
"$TXLC" --version | grep -q "oneDNN .*, dispatching to "
echo ok
