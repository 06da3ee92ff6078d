#!/bin/sh
# tests/tools/documents_stream_test.sh TXLC MODELS_DIR - `score --documents -` answers each document as it
# arrives (driver/document_stream.h). Documents are written one at a time into a FIFO made in a temporary
# folder, and each one's line must be out before the next is written (60 s at most each); the lines are
# those of the same documents read from a file, bit for bit: plain lines and JSON Lines, at --batch 1 and 3,
# with a document that cannot be scored among them. SIGTERM while it waits for input ends it with the
# lines so far and a partial summary; -o FILE gets the same lines. (--resume with -: cli_errors.txt.)
set -u
TXLC=$1
M=$2
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# Waits up to 60 s for FILE to hold N lines (less if the process ends first).
lines_within() {  # FILE N
  i=0
  while [ "$(wc -l < "$1")" -lt "$2" ]; do
    kill -0 "$pid" 2> /dev/null || break
    i=$((i + 1))
    [ $i -gt 600 ] && return 1
    sleep 0.1
  done
  [ "$(wc -l < "$1")" -ge "$2" ]
}

# Starts txlc reading documents from a new FIFO (fd 3 writes to it): NAME FLAGS...
start() {
  name=$1
  shift
  mkfifo "$T/$name.fifo"
  : > "$T/$name.out"  # the child opens it only once the FIFO has a writer (exec 3> below)
  "$TXLC" score "$M/kjv-char" --documents - --threads 1 "$@" < "$T/$name.fifo" > "$T/$name.out" 2> "$T/$name.err" &
  pid=$!
  exec 3> "$T/$name.fifo"
}

# Feeds DOCS's lines one at a time, each answered before the next; then the same from the file: NAME DOCS FLAGS...
feed() {
  name=$1 docs=$2
  shift 2
  start "$name" "$@"
  n=0
  while IFS= read -r line; do
    printf '%s\n' "$line" >&3
    n=$((n + 1))
    lines_within "$T/$name.out" $n || { bad "$name: no line for document $n within 60 s"; break; }
  done < "$docs"
  exec 3>&-
  wait "$pid"
  rc=$?
  pid=
  [ $rc -eq 0 ] || bad "$name: exit $rc: $(cat "$T/$name.err")"
  "$TXLC" score "$M/kjv-char" --documents "$docs" --threads 1 "$@" > "$T/$name.file" 2> /dev/null
  if cmp -s "$T/$name.out" "$T/$name.file"; then echo "ok: $name: $n lines, each before the next document"; else
    bad "$name: the lines differ from the file's"
    diff "$T/$name.out" "$T/$name.file" | head -4
  fi
  grep -q "^txlc: score: $n documents (1 with errors, 0 resumed)" "$T/$name.err" || bad "$name: summary: $(cat "$T/$name.err")"
}

grep -v '^ *$' "$M/kjv-char/valid.txt" | head -c 3000 | head -n 5 > "$T/five.txt"
{ head -n 2 "$T/five.txt"; echo; tail -n 3 "$T/five.txt"; } > "$T/plain.txt"
awk '{ gsub(/"/, "\\\""); printf "{\"id\": \"d%d\", \"text\": \"%s\"}\n", NR, $0 }' "$T/plain.txt" > "$T/docs.jsonl"
feed plain "$T/plain.txt"
feed plain_batch3 "$T/plain.txt" --batch 3
feed jsonl "$T/docs.jsonl" --qlen 16
feed jsonl_batch3 "$T/docs.jsonl" --batch 3 --qlen 16

# SIGTERM while it waits for the next document: the lines so far, exit 143, the summary marked partial.
start term
head -n 1 "$T/plain.txt" >&3
if lines_within "$T/term.out" 1; then
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  [ $rc -eq 143 ] || bad "term: exit $rc, expected 143: $(cat "$T/term.err")"
  grep -q "interrupted by SIGTERM after 1 of 1 documents read" "$T/term.err" || bad "term: $(cat "$T/term.err")"
  [ "$(wc -l < "$T/term.out")" -eq 1 ] || bad "term: $(wc -l < "$T/term.out") lines, expected 1"
else
  bad "term: no line for the first document within 60 s"
  kill "$pid"
  wait "$pid"
fi
exec 3>&-
pid=
echo "ok: term"

# -o FILE: the lines of a pipe, the file complete once the input ends.
"$TXLC" score "$M/kjv-char" --documents - --threads 1 -o "$T/o.jsonl" < "$T/plain.txt" 2> "$T/o.err" ||
  bad "-o: $(cat "$T/o.err")"
cmp -s "$T/o.jsonl" "$T/plain.file" || bad "-o FILE: the lines differ from the file's"
[ -e "$T/o.jsonl.partial" ] && bad "-o FILE: FILE.partial left behind"

[ "$fail" -eq 0 ] && echo "documents stream: all passed"
[ "$fail" -eq 0 ]
