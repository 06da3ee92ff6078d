#!/bin/bash
# tests/install/install_test.sh BUILD SOURCE PYTHON - `cmake --install BUILD --prefix P` into a temporary P, then
# what a user gets there: P/bin/txlc runs (--version, --help, a short score of the bundled kjv-char model, a
# standalone executable of it that gives the same figure), the man page renders and names every command and flag
# `txlc --help` lists, the bash completion completes them, the zsh completion lists them (and loads, where zsh is
# installed), and the module imports from P's site folder with PYTHONPATH (PYTHON empty: built without the module)
# and copies P/bin/txlc for compile(emit="exe").
set -u
BUILD=$1 SOURCE=$2 PYTHON=${3:-}
. "$(dirname "$0")/help_names.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=$work/prefix
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cmake --install "$BUILD" --prefix "$P" >"$work/install.log" 2>&1 || { cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
TXLC=$P/bin/txlc
for f in bin/txlc share/man/man1/txlc.1 share/bash-completion/completions/txlc share/zsh/site-functions/_txlc; do
  [ -f "$P/$f" ] || bad "$f not installed under the prefix"
done
[ -x "$TXLC" ] || { echo "FAIL: $TXLC is not executable"; exit 1; }
grep -q "^-- Installing: /" "$work/install.log" && ! grep "^-- Installing: " "$work/install.log" | grep -qv "Installing: $P/" ||
  bad "cmake --install wrote outside the prefix: $(grep '^-- Installing: ' "$work/install.log" | grep -v "$P/")"

# The installed executable.
"$TXLC" --version | head -1 | grep -q '^txlc [0-9]' || bad "txlc --version: $("$TXLC" --version 2>&1 | head -1)"
commands=$(help_commands "$TXLC")
[ "$(echo "$commands" | wc -l)" -ge 10 ] || bad "txlc --help lists too few commands: $(echo $commands)"
head -c 3000 "$SOURCE/models/kjv-char/valid.txt" >"$work/text.txt"
"$TXLC" score "$SOURCE/models/kjv-char" "$work/text.txt" --json --threads 1 >"$work/score.json" 2>"$work/score.err" &&
  grep -q '"bits_per_char"' "$work/score.json" || bad "installed txlc score: $(cat "$work/score.err")"
# A standalone executable made by the installed txlc (its libraries copied beside it) scores the same text.
mkdir "$work/exe-dir"
"$TXLC" compile "$SOURCE/models/kjv-char" -o "$work/exe-dir/kjv" --emit exe >/dev/null 2>"$work/compile.err" &&
  "$work/exe-dir/kjv" score "$work/text.txt" --json --threads 1 >"$work/exe.json" 2>>"$work/compile.err" &&
  figure=$(grep -o '"bits_per_char": *[0-9.]*' "$work/score.json") && [ -n "$figure" ] &&
  [ "$(grep -o '"bits_per_char": *[0-9.]*' "$work/exe.json")" = "$figure" ] ||
  bad "standalone executable of the installed txlc: $(cat "$work/compile.err") $(cat "$work/exe.json")"

# The man page: renders, and each command's section names each of its flags (common ones by name).
man_src=$P/share/man/man1/txlc.1
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$man_src" >"$work/man.txt" 2>"$work/man.err" || bad "man -l: $(cat "$work/man.err")"
  grep -q '^NAME' "$work/man.txt" && grep -q '^COMMANDS' "$work/man.txt" && grep -q '^EXIT STATUS' "$work/man.txt" ||
    bad "man -l: no NAME, COMMANDS or EXIT STATUS section"
fi
if command -v groff >/dev/null; then
  warnings=$(groff -man -ww -z "$man_src" 2>&1)
  [ -z "$warnings" ] || bad "groff warns on the man page: $warnings"
fi
grep -q '^\.TH TXLC 1 ' "$man_src" || bad "man page: no .TH TXLC 1 line"
for c in $commands; do
  section=$(awk -v c="$c" '$0 == ".SS \"" c "\"" { on = 1; next } on && /^\.S[SH] / { exit } on' "$man_src")
  [ -n "$section" ] || { bad "man page: no section for '$c'"; continue; }
  for f in $(help_flags "$TXLC" "$c"); do
    escaped=$(printf '%s' "$f" | sed 's/-/\\\\-/g')
    printf '%s\n' "$section" | grep -q -- "\\\\fB$escaped\\\\fR" || bad "man page: '$c' does not name $f"
  done
done

# bash: the installed script, sourced as bash-completion would, completes every command and each command's flags.
bash_script=$P/share/bash-completion/completions/txlc
. "$bash_script" || bad "sourcing the bash completion failed"
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _txlc
  printf '%s\n' "${COMPREPLY[@]}"
}
offered=$(complete_words txlc "")
for c in $commands; do printf '%s\n' "$offered" | grep -qx -- "$c" || bad "bash: 'txlc <TAB>' does not offer $c"; done
for c in $commands; do
  offered=$(complete_words txlc "$c" -)
  for f in $(help_flags "$TXLC" "$c"); do
    printf '%s\n' "$offered" | grep -qx -- "$f" || bad "bash: 'txlc $c -<TAB>' does not offer $f"
  done
done
[ "$(complete_words txlc run --format s)" = safetensors ] || bad "bash: 'txlc run --format s<TAB>' is not safetensors"

# zsh: the installed function lists every command and flag; where zsh is installed, it parses and compinit loads it.
zsh_script=$P/share/zsh/site-functions/_txlc
head -1 "$zsh_script" | grep -qx '#compdef txlc' || bad "zsh: the first line is not '#compdef txlc'"
for c in $commands; do
  grep -q "^    '$c:" "$zsh_script" || bad "zsh: command $c not listed"
  for f in $(help_flags "$TXLC" "$c"); do
    awk -v c="$c" '$0 == "    " c ")" { on = 1; next } on && /^      ;;/ { exit } on' "$zsh_script" | grep -q -- "'\*\?$f\[" ||
      bad "zsh: '$c' does not offer $f"
  done
done
if command -v zsh >/dev/null; then
  zsh -n "$zsh_script" || bad "zsh -n: the completion does not parse"
  got=$(HOME=$work zsh -f -c 'fpath=("$1" $fpath); autoload -U compinit && compinit -u -D && print -r -- $_comps[txlc]' \
    zsh "$P/share/zsh/site-functions" 2>&1)
  [ "$got" = _txlc ] || bad "zsh: compinit does not bind txlc to _txlc (got: $got)"
fi

# The module, from the prefix's site folder alone.
if [ -n "$PYTHON" ]; then
  site=$(cd "$P" && find . -name 'txlc.cpython-*.so' -printf '%h\n' | head -1)
  case $site in
    ./lib/python3*/*-packages) ;;
    *) bad "the module is not in lib/python3.X/{site,dist}-packages under the prefix: '${site:-not installed}'" ;;
  esac
  [ -f "$P/$site/txlc.pyi" ] || bad "txlc.pyi not beside the module"
  # compile(emit="exe") copies P/bin/txlc: with echo standing in for it there, the executable echoes.
  mv "$TXLC" "$TXLC.real"
  cp /bin/echo "$TXLC"
  out=$(cd "$work" && env -u TXLC_EXECUTABLE PYTHONPATH="$P/$site" PYTHONDONTWRITEBYTECODE=1 PATH=/usr/bin:/bin "$PYTHON" -c '
import sys, txlc
assert txlc.__file__.startswith(sys.argv[1]), txlc.__file__
txlc.compile(sys.argv[2], "exe", emit="exe", threads=1)
print("imported", txlc.__version__ if hasattr(txlc, "__version__") else "")
' "$P/" "$SOURCE/models/kjv-char" 2>&1) || bad "the installed module: $out"
  [ "$("$work/exe" installed-txlc-copied 2>&1 | head -1)" = installed-txlc-copied ] || bad "compile(emit='exe') did not copy the installed $TXLC"
  mv "$TXLC.real" "$TXLC"
fi

[ $fail = 0 ] && echo "install: all passed"
exit $fail
