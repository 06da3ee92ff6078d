#!/bin/sh
# tests/tools/cli_test.sh TXLC MODELS_DIR - the command-line error table (cli_errors.txt).
#
# Each row runs txlc and checks the exit code, that stderr is one line holding
# the expected text, and that stdout is empty. Prints every failing row.
set -u
TXLC=$1
M=$2
TABLE=$(dirname "$0")/cli_errors.txt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Inputs the rows use.
: > "$T/empty.txt"
printf 'In the beginning\nAn\303\251\n' > "$T/accent.txt"
printf 'I' > "$T/one.txt"
printf '1 99\n' > "$T/ids.txt"
printf 'In the beginning\n\nAnd God\n' > "$T/gap.txt"
printf 'In the beginning\nGod\000created\n' > "$T/nul.txt"
printf '\357\273\277In the beginning\n' > "$T/bom.txt"
printf 'In the beginning\r\nAnd God\r\n' > "$T/crlf.txt"
printf '\200\004K\001.' > "$T/int.pkl"  # a pickle of the integer 1
printf 'In the qzxv blorf frumious\nAnd God wibble\n' > "$T/unk.txt"
"$TXLC" compile "$M/kjv-char" -o "$T/good.txla" 2>/dev/null || { echo "setup: compile failed"; exit 1; }
"$TXLC" compile "$M/kjv-char" -o "$T/int8.txla" --precision int8 2>/dev/null || { echo "setup: compile int8 failed"; exit 1; }
"$TXLC" run "$M/kjv-char" --tokens "1 2" --state-out "$T/char.state" >/dev/null 2>&1 || { echo "setup: run failed"; exit 1; }
head -c 5000 "$T/good.txla" > "$T/trunc.txla"
cp "$T/good.txla" "$T/corrupt.txla"
printf 'X' | dd of="$T/corrupt.txla" bs=1 seek=3000 conv=notrunc 2>/dev/null
cp "$T/good.txla" "$T/v9.txla"
printf '\011' | dd of="$T/v9.txla" bs=1 seek=8 conv=notrunc 2>/dev/null

fail=0
rows=0
while IFS= read -r line; do
  case "$line" in '#'*|'') continue ;; esac
  code=$(printf '%s' "$line" | cut -d'|' -f1 | tr -d ' ')
  want=$(printf '%s' "$line" | cut -d'|' -f2 | sed 's/^ //; s/ $//')
  args=$(printf '%s' "$line" | cut -d'|' -f3- | sed 's/^ //')
  want=$(printf '%s' "$want" | sed "s|\$T|$T|g; s|\$M|$M|g")
  rows=$((rows + 1))
  eval "set -- $args"
  "$TXLC" "$@" > "$T/out" 2> "$T/err"
  got=$?
  lines=$(wc -l < "$T/err")
  if [ "$got" != "$code" ] || ! grep -qF -- "$want" "$T/err" || [ "$lines" -ne 1 ] || [ -s "$T/out" ]; then
    echo "FAIL: txlc $args"
    echo "  expected exit $code and one stderr line with: $want"
    echo "  got exit $got, $lines stderr lines: $(head -c 400 "$T/err")"
    [ -s "$T/out" ] && echo "  stdout: $(head -c 200 "$T/out")"
    fail=$((fail + 1))
  fi
done < "$TABLE"
echo "$rows rows, $fail failed"
[ "$fail" -eq 0 ]
