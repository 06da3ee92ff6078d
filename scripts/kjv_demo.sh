#!/usr/bin/env bash
# scripts/kjv_demo.sh [TXLC] - the bundled character model end to end:
# compile it to an artifact and a standalone executable, print the optimized
# graph's summary, score the validation text (the reference: 2.117692 bits per
# character at qlen 64, mem_len 64), and generate a few hundred characters.
set -euo pipefail
cd "$(dirname "$0")/.."
txlc=${1:-build/tools/txlc}
out=${TMPDIR:-/tmp}/txlc-demo
mkdir -p "$out"

echo "== compile models/kjv-char to an artifact and to a standalone executable" >&2
"$txlc" compile models/kjv-char -o "$out/kjv-char.txla" --qlen 64 --mem-len 64
"$txlc" compile models/kjv-char -o "$out/kjv-char" --qlen 64 --mem-len 64 --emit exe

echo "== the optimized graph of one segment (qlen 64, mem_len 64): what the passes bought" >&2
"$txlc" inspect models/kjv-char --qlen 64 --mlen 64 --stats

echo "== score the validation text with the artifact (reference: 2.117692 bits per character)" >&2
"$txlc" score "$out/kjv-char.txla" models/kjv-char/valid.txt

echo "== generate 300 characters with the standalone executable, from another directory" >&2
(cd / && "$out/kjv-char" generate --prompt "Joh3:16 For God so loved" -n 300 --temperature 0.7 --seed 1)
