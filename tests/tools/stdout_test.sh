#!/bin/sh
# tests/tools/stdout_test.sh TXLC MODELS_DIR - `-o -` is standard output where the output streams; inspect's -o FILE.
set -u
TXLC=$1
M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TXLC" run "$M/kjv-char" --tokens "1 2 3" > "$T/a.json" 2>/dev/null || { echo "run failed"; exit 1; }
"$TXLC" run "$M/kjv-char" --tokens "1 2 3" -o - > "$T/b.json" 2>/dev/null || { echo "run -o - failed"; exit 1; }
cmp -s "$T/a.json" "$T/b.json" || { echo "run -o - differs from run's stdout"; exit 1; }
[ -e ./- ] && { echo "run -o - wrote a file named -"; exit 1; }
printf 'In the beginning\nAnd God said\n' > "$T/docs.txt"
"$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" > "$T/c.jsonl" 2>/dev/null || { echo "score --documents failed"; exit 1; }
"$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" -o - > "$T/d.jsonl" 2>/dev/null || { echo "score --documents -o - failed"; exit 1; }
cmp -s "$T/c.jsonl" "$T/d.jsonl" || { echo "score --documents -o - differs from its stdout"; exit 1; }
[ "$(wc -l < "$T/d.jsonl")" -eq 2 ] || { echo "expected 2 lines from score --documents -o -"; exit 1; }
for report in "" "--stats" "--memory-plan" "--memory-plan --format json"; do
  # shellcheck disable=SC2086
  "$TXLC" inspect "$M/kjv-char" $report > "$T/i.txt" 2>/dev/null || { echo "inspect $report failed"; exit 1; }
  # shellcheck disable=SC2086
  "$TXLC" inspect "$M/kjv-char" $report -o - > "$T/j.txt" 2>/dev/null || { echo "inspect $report -o - failed"; exit 1; }
  # shellcheck disable=SC2086
  "$TXLC" inspect "$M/kjv-char" $report -o "$T/k.txt" > "$T/l.txt" 2>/dev/null || { echo "inspect $report -o FILE failed"; exit 1; }
  [ -s "$T/i.txt" ] || { echo "inspect $report printed nothing"; exit 1; }
  cmp -s "$T/i.txt" "$T/j.txt" || { echo "inspect $report -o - differs from its stdout"; exit 1; }
  cmp -s "$T/i.txt" "$T/k.txt" || { echo "inspect $report -o FILE differs from its stdout"; exit 1; }
  [ -s "$T/l.txt" ] && { echo "inspect $report -o FILE also wrote to stdout"; exit 1; }
done
echo "-o -: stdout for run, score --documents and inspect; inspect -o FILE holds what it prints"
