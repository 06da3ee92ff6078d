#!/bin/bash
# tests/tools/progress_test.sh TXLC MODELS_DIR CHECKPOINTS_DIR - progress on stderr when it is a file (docs/CLI.md, "Progress"):
#
# score --progress and score --documents --progress write plain lines (no
# carriage return, no escape sequence), the first at once, with counts and
# a percentage; compile and import --progress write one line per phase
# with its elapsed time (none without --progress into a file); stdout never
# carries any of it.
set -u
TXLC=$1
M=$2
C=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
plain() {  # FILE WHAT: no carriage return or escape in FILE
  if LC_ALL=C grep -q "$(printf '[\r\033]')" "$1"; then bad "$2: a carriage return or escape on stderr"; fi
}

"$TXLC" score "$M/kjv-char" "$M/kjv-char/valid.txt" --progress > "$T/score.out" 2> "$T/score.err" ||
  bad "score --progress: $(tail -c 300 "$T/score.err")"
plain "$T/score.err" "score --progress"
grep -Eq '^txlc: score: [0-9]+/[0-9]+ tokens \([0-9.]+ %\), perplexity [0-9.]+, bpc [0-9.]+, [0-9]+ tokens/s' \
  "$T/score.err" || bad "score --progress: no plain progress line: $(head -c 300 "$T/score.err")"
grep -q "tokens/s\|txlc:" "$T/score.out" && bad "score --progress: progress on stdout"
grep -q "^perplexity " "$T/score.out" || bad "score --progress: no result on stdout"

head -n 40 "$M/kjv-char/valid.txt" | grep -v '^$' > "$T/docs.txt"
"$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" --progress > "$T/docs.out" 2> "$T/docs.err" ||
  bad "score --documents --progress: $(tail -c 300 "$T/docs.err")"
plain "$T/docs.err" "score --documents --progress"
grep -Eq '^txlc: score: [0-9]+/[0-9]+ documents \([0-9.]+ %\), [0-9]+ tokens, [0-9]+ tokens/s' "$T/docs.err" ||
  bad "score --documents --progress: no plain progress line: $(head -c 300 "$T/docs.err")"
[ "$(wc -l < "$T/docs.out")" = "$(wc -l < "$T/docs.txt")" ] || bad "score --documents: not one line per document"

"$TXLC" compile "$M/kjv-char" -o "$T/kjv.txla" --progress > "$T/compile.out" 2> "$T/compile.err" ||
  bad "compile: $(cat "$T/compile.err")"
plain "$T/compile.err" "compile"
for phase in "read .*kjv-char \\(directory\\)" "built and optimized [0-9]* graphs" "planned the main graph \\([0-9]+ steps\\)" \
  "wrote .*kjv.txla"; do
  grep -Eq "^txlc: compile: $phase \([0-9]+\.[0-9]{2} s\)$" "$T/compile.err" ||
    bad "compile: no phase line '$phase': $(cat "$T/compile.err")"
done
[ -s "$T/compile.out" ] && bad "compile: phases on stdout"

"$TXLC" import "$C/hf_tiny" -o "$T/imported" --progress > "$T/import.out" 2> "$T/import.err" || bad "import: $(cat "$T/import.err")"
plain "$T/import.err" "import"
for phase in "read [0-9]+ tensors from .*hf_tiny" "bound the weights against the spec" "wrote .*imported"; do
  grep -Eq "^txlc: import: $phase \([0-9]+\.[0-9]{2} s\)$" "$T/import.err" ||
    bad "import: no phase line '$phase': $(cat "$T/import.err")"
done
[ -s "$T/import.out" ] && bad "import: phases on stdout"
# Without --progress, stderr into a file gets no phase lines (an error stays the one line).
"$TXLC" compile "$M/kjv-char" -o "$T/quiet.txla" 2> "$T/quiet.err" || bad "compile: $(cat "$T/quiet.err")"
grep -q "^txlc: compile:" "$T/quiet.err" && bad "compile: phase lines without --progress into a file"

[ $fail = 0 ] && echo "progress: plain lines on a file for score, score --documents; phases for compile and import"
exit $fail
