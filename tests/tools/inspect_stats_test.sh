#!/bin/sh
# tests/tools/inspect_stats_test.sh TXLC SPEC [FLAGS...]
# `txlc inspect SPEC --stats FLAGS`: the op table's columns line up whatever
# the op names. Every line from the "op" header to the blank line after it
# has the header's length (the counts are right-aligned under "input" and
# "optimized"), and a name is followed by at least one space. Run on the
# WT103 spec with --outputs nll, whose gather-tail-clusters pass makes
# logprob_pick_gathered, the longest op name.
TXLC=$1
SPEC=$2
shift 2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TXLC" inspect "$SPEC" --stats "$@" > "$T/stats.txt" 2> "$T/err" || { cat "$T/err"; echo "inspect --stats failed"; exit 1; }
grep -q '^logprob_pick_gathered ' "$T/stats.txt" || { cat "$T/stats.txt"; echo "no logprob_pick_gathered row"; exit 1; }
awk '
  /^op / { table = 1; width = length($0); next }
  table && $0 == "" { exit }
  table {
    rows++
    if (length($0) != width) { printf "misaligned (%d columns, the header %d): %s\n", length($0), width, $0; bad = 1 }
    if ($0 !~ /^[a-z_0-9]+ +[0-9]+ +[0-9]+$/) { printf "not a row: %s\n", $0; bad = 1 }
  }
  END {
    if (!width) { print "no op table"; exit 1 }
    if (!rows) { print "an empty op table"; exit 1 }
    exit bad
  }' "$T/stats.txt" || { cat "$T/stats.txt"; exit 1; }
echo "inspect --stats: the op table is aligned"
