#!/bin/sh
# tests/tools/memory_plan_test.sh TXLC SPEC [RATIO]
#
# `txlc inspect SPEC --memory-plan` in both formats: every JSON key of
# docs/MEMORY.md is there, lower bound <= arena <= no reuse, and the arena is
# within RATIO (default 1.15) of the lower bound, or at most 256 KiB over it
# (an arena of ~1 MiB, as enwik8's since rel_attention, is a few buffers:
# one buffer of fragmentation is over 15% there and nothing in the process).
set -u
TXLC=$1 SPEC=$2 RATIO=${3:-1.15}
json=$("$TXLC" inspect "$SPEC" --memory-plan --format json 2>/dev/null) || { echo "inspect --memory-plan --format json failed"; exit 1; }
key() {
  v=$(printf '%s\n' "$json" | sed -n "s/^  \"$1\": *\([0-9.eE+-]*\),*$/\1/p")
  [ -n "$v" ] || { echo "no top-level \"$1\" in the JSON report" >&2; exit 1; }
  echo "$v"
}
arena=$(key arena_bytes) || exit 1
bound=$(key lower_bound_bytes) || exit 1
noreuse=$(key no_reuse_bytes) || exit 1
state=$(key state_bytes) || exit 1
weights=$(key weights_bytes) || exit 1
printf '%s\n' "$json" | grep -q '"buffers": \[' || { echo "no buffers list"; exit 1; }
printf '%s\n' "$json" | grep -q '"last_step"' || { echo "buffers carry no live range"; exit 1; }
echo "$SPEC: arena $arena, lower bound $bound, no reuse $noreuse, state $state, weights $weights"
awk -v a="$arena" -v b="$bound" -v n="$noreuse" -v s="$state" -v w="$weights" -v r="$RATIO" 'BEGIN {
  if (!(b > 0 && b <= a && a <= n)) { print "expected 0 < lower bound <= arena <= no reuse"; exit 1 }
  if (a > r * b && a - b > 262144) { printf "arena is %.3fx the lower bound, over %s (and %d bytes over it)\n", a / b, r, a - b; exit 1 }
  if (!(s > 0 && w > 0)) { print "expected state and weight bytes"; exit 1 } }' || exit 1
text=$("$TXLC" inspect "$SPEC" --memory-plan 2>/dev/null) || { echo "inspect --memory-plan failed"; exit 1; }
printf '%s\n' "$text" | grep -q '^  arena .*x the lower bound)$' || { echo "text report lacks the arena line"; exit 1; }
