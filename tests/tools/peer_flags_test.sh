#!/bin/sh
# tests/tools/peer_flags_test.sh TXLC MODELS_DIR - other tools' spellings that txlc takes as aliases.
#
# -m MODEL (anywhere), -f FILE (score), -p/--prompt, -n/--n-predict/--max-new-tokens, --temp,
# -t/--threads give what txlc's own flags give; --temperature 0 is greedy decoding.
set -u
TXLC=$1
M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
same() {  # same WHAT FILE1 FILE2
  if cmp -s "$2" "$3"; then echo "ok: $1"; else
    echo "FAIL: $1"; diff "$2" "$3" | head -5; fail=$((fail + 1))
  fi
}
head -c 4000 "$M/kjv-char/valid.txt" > "$T/text.txt"
"$TXLC" generate "$M/kjv-char" --prompt "In the" -n 30 --greedy > "$T/greedy" 2>/dev/null
"$TXLC" generate -m "$M/kjv-char" -p "In the" --n-predict 30 --temp 0 > "$T/temp0" 2>/dev/null
"$TXLC" generate "$M/kjv-char" --prompt "In the" --max-new-tokens 30 --temperature 0 -t 1 > "$T/temperature0" 2>/dev/null
"$TXLC" generate "$M/kjv-char" --prompt "In the" -n 30 --greedy --temperature 0 > "$T/both" 2>/dev/null
[ -s "$T/greedy" ] || { echo "FAIL: generate --greedy printed nothing"; fail=$((fail + 1)); }
same "generate -m -p --n-predict --temp 0 == --greedy" "$T/greedy" "$T/temp0"
same "generate --max-new-tokens --temperature 0 -t 1 == --greedy" "$T/greedy" "$T/temperature0"
same "generate --greedy --temperature 0 == --greedy" "$T/greedy" "$T/both"
"$TXLC" score "$M/kjv-char" "$T/text.txt" --qlen 32 --threads 2 > "$T/score" 2>/dev/null
"$TXLC" score -m "$M/kjv-char" -f "$T/text.txt" --qlen 32 -t 2 > "$T/score.m.f" 2>/dev/null
"$TXLC" score "$T/text.txt" --qlen 32 -m "$M/kjv-char" > "$T/score.file.m" 2>/dev/null
"$TXLC" score --model="$M/kjv-char" --file "$T/text.txt" --qlen 32 > "$T/score.long" 2>/dev/null
[ -s "$T/score" ] || { echo "FAIL: score printed nothing"; fail=$((fail + 1)); }
same "score -m MODEL -f FILE -t 2 == score MODEL FILE" "$T/score" "$T/score.m.f"
same "score FILE -m MODEL == score MODEL FILE" "$T/score" "$T/score.file.m"
same "score --model= --file == score MODEL FILE" "$T/score" "$T/score.long"
[ "$fail" -eq 0 ] && echo "peer flags: all passed"
[ "$fail" -eq 0 ]
