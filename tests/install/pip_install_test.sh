#!/bin/bash
# tests/install/pip_install_test.sh BUILD SOURCE PYTHON - `pip install SOURCE` into a venv that PYTHON (Debian's
# python3) made with --system-site-packages, offline (--no-index: numpy comes from Debian), built from BUILD
# (TXLC_BUILD_DIR, python/build_backend.py) so that it compiles nothing: the venv's python imports the module from
# any folder, the venv's bin/txlc runs and is the one compile(emit="exe") copies, the man page and completions are
# under the venv's share/, and `pip uninstall` removes every file. Exit 77 (skipped) without venv or pip.
set -u
BUILD=$1 SOURCE=$2 PYTHON=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

V=$work/venv
"$PYTHON" -m venv --system-site-packages "$V" >"$work/venv.log" 2>&1 || { echo "SKIP: $PYTHON -m venv: $(tail -1 "$work/venv.log")"; exit 77; }
[ -x "$V/bin/pip" ] || { echo "SKIP: the venv has no pip (python3-pip, python3-venv)"; exit 77; }
(cd "$work" && env TXLC_BUILD_DIR="$BUILD" PIP_NO_INPUT=1 "$V/bin/pip" install --no-index --no-cache-dir "$SOURCE") \
  >"$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; echo "FAIL: pip install --no-index $SOURCE"; exit 1; }

[ -x "$V/bin/txlc" ] || bad "pip put no executable txlc in the venv's bin/"
"$V/bin/txlc" --version 2>&1 | head -1 | grep -q '^txlc [0-9]' || bad "venv txlc --version: $("$V/bin/txlc" --version 2>&1 | head -1)"
for f in share/man/man1/txlc.1 share/bash-completion/completions/txlc share/zsh/site-functions/_txlc; do
  [ -f "$V/$f" ] || bad "$f not in the venv"
done
site=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
ls "$site"/txlc.cpython-*.so "$site/txlc.pyi" >/dev/null 2>&1 || bad "the module or its stub is not in $site"

# The venv's bin/txlc is what compile(emit="exe") copies: with echo standing in for it there, the executable echoes.
mv "$V/bin/txlc" "$work/txlc.real"
cp /bin/echo "$V/bin/txlc"
out=$(cd "$work" && env -u TXLC_EXECUTABLE -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 PATH=/usr/bin:/bin "$V/bin/python" -c '
import sys, txlc
assert txlc.__file__.startswith(sys.argv[1]), txlc.__file__
txlc.compile(sys.argv[2], "exe", emit="exe", threads=1)
' "$V/" "$SOURCE/models/kjv-char" 2>&1) || bad "the module in the venv: $out"
[ "$("$work/exe" venv-txlc-copied 2>&1 | head -1)" = venv-txlc-copied ] || bad "compile(emit='exe') did not copy the venv's bin/txlc"
mv "$work/txlc.real" "$V/bin/txlc"

"$V/bin/pip" uninstall -y txlc >"$work/uninstall.log" 2>&1 || bad "pip uninstall: $(tail -1 "$work/uninstall.log")"
left=$(cd "$V" && ls bin/txlc share/man/man1/txlc.1 "$site"/txlc.* 2>/dev/null)
[ -z "$left" ] || bad "pip uninstall left: $left"

[ $fail = 0 ] && echo "pip install: all passed"
exit $fail
