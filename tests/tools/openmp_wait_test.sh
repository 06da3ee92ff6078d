#!/bin/sh
# tests/tools/openmp_wait_test.sh TXLC - txlc starts libgomp with a short spin
# (GOMP_SPINCOUNT=1000, tools/openmp_wait.cpp) unless the user chose a spin
# count or a wait policy; OMP_DISPLAY_ENV makes libgomp print what it read.
set -u
TXLC=$1
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
echo "GOMP_SPINCOUNT: 1000 by default, the user's spin count and wait policy kept"
