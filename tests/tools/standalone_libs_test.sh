#!/bin/sh
# tests/tools/standalone_libs_test.sh TXLC MODELS_DIR - a standalone executable
# runs where the system's oneDNN, OpenMP, OpenCL loader and C++ runtime are
# not visible: in a private mount namespace every library it bundles
# (driver/runtime_libraries.h) is hidden behind an empty file, plain txlc then
# fails to start, and the executable still scores the text as txlc does.
# Exits 77 (skipped) where mount namespaces are not available (not root).
set -eu
TXLC=$1
M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unshare --mount true 2>/dev/null || { echo "skipped: no mount namespaces here"; exit 77; }
head -c 8000 "$M/kjv-char/valid.txt" > "$T/part.txt"
key() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\),*$/\1/p"; }

mkdir "$T/out"
"$TXLC" compile "$M/kjv-char" -o "$T/out/kjv" --emit exe 2>/dev/null
ls "$T/out/txlc-libs" > "$T/libs"
for lib in libdnnl.so.2 libgomp.so.1; do
  grep -qx "$lib" "$T/libs" || { echo "$lib is not bundled: $(cat "$T/libs")"; exit 1; }
done
want=$("$TXLC" score "$M/kjv-char" "$T/part.txt" --json | key nll_sum)

# Where the loader finds each bundled library on this system.
: > "$T/empty"
: > "$T/hide"
for lib in $(cat "$T/libs"); do
  path=$(ldd "$TXLC" | sed -n "s|^[[:space:]]*$lib => \([^ ]*\) .*|\1|p")
  [ -n "$path" ] && echo "$path" >> "$T/hide"
done
grep -q libdnnl "$T/hide" || { echo "ldd does not show libdnnl"; exit 1; }

cat > "$T/inside.sh" <<INSIDE
set -eu
for p in \$(cat "$T/hide"); do mount --bind "$T/empty" "\$p"; done
if "$TXLC" --version > /dev/null 2>&1; then echo "plain txlc still starts: the libraries are not hidden"; exit 1; fi
cd /
"$T/out/kjv" score "$T/part.txt" --json
INSIDE
got=$(unshare --mount sh "$T/inside.sh" | key nll_sum)
echo "nll_sum: txlc $want, standalone without the system's libraries $got"
[ -n "$got" ] && [ "$got" = "$want" ]
echo ok
