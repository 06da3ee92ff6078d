#!/bin/sh
# tests/tools/openmp_wait_test.sh TXLC MODELS_DIR - txlc starts libgomp with a short spin
# (GOMP_SPINCOUNT=1000, tools/openmp_wait.cpp) unless the user chose a spin
# count or a wait policy; OMP_DISPLAY_ENV makes libgomp print what it read.
set -u
TXLC=$1
M=$2
spin() { env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose "$@" "$TXLC" --version 2>&1 >/dev/null |
  sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p"; }
got=$(spin) && [ "$got" = 1000 ] || { echo "default: expected GOMP_SPINCOUNT 1000, got '$got'"; exit 1; }
got=$(spin GOMP_SPINCOUNT=5) && [ "$got" = 5 ] || { echo "GOMP_SPINCOUNT=5 given: expected 5 kept, got '$got'"; exit 1; }
got=$(spin OMP_WAIT_POLICY=active) && [ "$got" != 1000 ] ||
  { echo "OMP_WAIT_POLICY=active given: expected libgomp's spin for it, got '$got'"; exit 1; }
# The re-exec keeps the arguments (the version is printed) and the
# environment (libgomp printed its settings above because OMP_DISPLAY_ENV survived).
out=$(env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$TXLC" --version 2>&1) || { echo "txlc --version failed: $out"; exit 1; }
echo "$out" | grep -q "^txlc " || { echo "txlc --version printed no version: $out"; exit 1; }
# ... and its name: ps and pkill see txlc, not "exe". score waits for its
# standard input meanwhile, which comes two seconds later.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp "$TXLC" "$T/txlc-named"
(sleep 2; echo "In the beginning") | env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$T/txlc-named" score "$M/kjv-char" - >/dev/null 2>&1 &
pid=$!
sleep 1
name=$(cat "/proc/$pid/comm" 2>/dev/null)
wait "$pid" || { echo "score of standard input failed"; exit 1; }
[ "$name" = txlc-named ] || { echo "the re-executed process is named '$name', expected 'txlc-named'"; exit 1; }
echo "GOMP_SPINCOUNT: 1000 by default, the user's spin count and wait policy kept, the name kept"
