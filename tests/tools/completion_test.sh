#!/bin/bash
# tests/tools/completion_test.sh TXLC - `txlc completion bash`, sourced and driven as bash drives it;
# `txlc completion zsh`, driven by an interactive zsh (tests/tools/zsh_complete.zsh) where zsh is installed.
set -u
TXLC=$1
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
touch a-file
script=$("$TXLC" completion bash) || { echo "txlc completion bash failed"; exit 1; }
eval "$script"
fail=0
complete -p txlc | grep -q -- "-F _txlc" || { echo "FAIL: complete -p txlc: $(complete -p txlc)"; fail=1; }
# complete WORDS...: the completions of the last word.
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _txlc
  printf '%s\n' "${COMPREPLY[@]}"
}
check() {
  local want=$1
  shift
  got=$(complete_words "$@")
  printf '%s\n' "$got" | grep -qx -- "$want" || { echo "FAIL: txlc ${*}<TAB>: expected $want, got: $(echo $got)"; fail=1; }
}
check score txlc sc
check --qlen txlc score --q
check --max-unk-fraction txlc score --max-unk
check --memory-plan txlc inspect --mem
check safetensors txlc run --format s
check dot txlc inspect --format d  # a set checked by oneOf (cli_checks.h)
check optimized txlc inspect --stage o
[ "$(complete_words txlc inspect --format "" | sort | tr '\n' ' ')" = "dot json text " ] ||
  { echo "FAIL: txlc inspect --format <TAB>: expected dot json text, got: $(complete_words txlc inspect --format "" | tr '\n' ' ')"; fail=1; }
check completion txlc comp
[ "$(complete_words txlc sc)" = score ] || { echo "FAIL: txlc sc<TAB> is not only score"; fail=1; }
# A positional argument with choices: the shells, then file names.
[ "$(complete_words txlc completion "" | sort | tr '\n' ' ')" = "bash zsh " ] ||
  { echo "FAIL: txlc completion <TAB>: expected bash zsh, got: $(complete_words txlc completion "" | tr '\n' ' ')"; fail=1; }
[ "$(complete_words txlc completion z)" = zsh ] || { echo "FAIL: txlc completion z<TAB> is not zsh"; fail=1; }
[ "$(complete_words txlc completion --help "")" = "$(printf 'bash\nzsh')" ] ||
  { echo "FAIL: txlc completion --help <TAB>: a flag before the argument is not one"; fail=1; }
[ "$(complete_words txlc completion bash "")" = a-file ] ||
  { echo "FAIL: txlc completion bash <TAB>: expected a-file, got: $(complete_words txlc completion bash "")"; fail=1; }
[ "$(complete_words txlc score "")" = a-file ] ||
  { echo "FAIL: txlc score <TAB>: expected a-file, got: $(complete_words txlc score "")"; fail=1; }
[ "$(complete_words txlc score --qlen "")" = a-file ] || { echo "FAIL: txlc score --qlen <TAB> is not a file"; fail=1; }

# zsh: the same questions to zsh's own completion system.
if command -v zsh > /dev/null; then
  mkdir "$T/zsh"
  "$TXLC" completion zsh > "$T/zsh/_txlc" || { echo "txlc completion zsh failed"; exit 1; }
  ln -s "$TXLC" "$T/zsh/txlc"
  touch "$T/zsh/a-file"
  zcheck() {
    local want=$1
    shift
    got=$(cd "$T/zsh" && timeout 60 zsh -f "$HERE/zsh_complete.zsh" "$T/zsh" "$*" | grep -v -e '^_txlc$' -e '^txlc$' -e '^matches$' | sort | tr '\n' ' ')
    [ "$got" = "$want" ] || { echo "FAIL: zsh: $*<TAB>: expected '$want', got '$got'"; fail=1; }
  }
  zcheck "score " txlc sc
  zcheck "--qlen " txlc score --ql
  zcheck "json safetensors " txlc run --format ""
  zcheck "dot json text " txlc inspect --format ""
  zcheck "bash zsh " txlc completion ""
  zcheck "zsh " txlc completion z
  zcheck "a-file " txlc completion bash ""
  zcheck "bash zsh " txlc completion --help ""  # a flag takes no value
  zcheck "a-file " txlc score --same-length ""
else
  echo "zsh is not installed: the zsh completion is not driven"
fi
[ $fail = 0 ] && echo "completion: all passed"
exit $fail
