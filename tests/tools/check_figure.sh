#!/bin/sh
# tests/tools/check_figure.sh TXLC MODEL FILE QLEN MEMLEN KEY EXPECTED TOLERANCE KIND [extra txlc flags]
#
# Scores FILE and checks `KEY` of the --json result against EXPECTED:
# KIND abs: |got - expected| <= TOLERANCE; KIND rel: |got/expected - 1| <= TOLERANCE.
set -u
TXLC=$1 MODEL=$2 FILE=$3 QLEN=$4 MEMLEN=$5 KEY=$6 EXPECTED=$7 TOL=$8 KIND=$9
shift 9
out=$("$TXLC" score "$MODEL" "$FILE" --qlen "$QLEN" --mem-len "$MEMLEN" --json "$@") || { echo "txlc score failed"; exit 1; }
got=$(printf '%s\n' "$out" | sed -n "s/^ *\"$KEY\": *\([-0-9.eE+]*\),*$/\1/p")
[ -n "$got" ] || { echo "no \"$KEY\" in: $out"; exit 1; }
echo "$KEY: got $got, reference $EXPECTED ($KIND tolerance $TOL)"
awk -v g="$got" -v e="$EXPECTED" -v t="$TOL" -v k="$KIND" 'BEGIN {
  d = (k == "rel") ? g / e - 1 : g - e; if (d < 0) d = -d; exit !(d <= t) }'
