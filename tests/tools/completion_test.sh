#!/bin/bash
# tests/tools/completion_test.sh TXLC - `txlc completion bash`, sourced and driven as bash drives it.
set -u
TXLC=$1
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
check completion txlc comp
[ "$(complete_words txlc sc)" = score ] || { echo "FAIL: txlc sc<TAB> is not only score"; fail=1; }
[ $fail = 0 ] && echo "completion: all passed"
exit $fail
