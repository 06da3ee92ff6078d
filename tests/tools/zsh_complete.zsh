# tests/tools/zsh_complete.zsh DIR LINE - what zsh's completion offers at the
# end of LINE, one match a line: an interactive zsh on a pseudo-terminal
# (zsh/zpty) with compinit and DIR/_txlc in $fpath, LINE typed and a Tab
# pressed. compadd is wrapped to record what each completion function adds.
# DIR holds _txlc (`txlc completion zsh`) and a `txlc` to run; the matches
# are written to DIR/matches and printed.
dir=$1 line=$2
out=$dir/matches
: > $out
zmodload zsh/zpty || exit 1
zpty -b z HOME=$dir PATH=$dir:$PATH zsh -f -i
zpty -w z "PS1='> '; fpath=($dir \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd() { local -a hits; builtin compadd -O hits \"\$@\"; print -rl -- \$hits >> $out; builtin compadd \"\$@\"; }"
zpty -w z "print -r -- READY''1"
zpty -r z ignored '*READY1*' || exit 1
# Completion runs before zle reads the next key: ^U clears the line, and the
# command after it prints a mark once the Tab's completion is over.
zpty -w -n z "$line"$'\t'
zpty -w z $'\C-u'"print -r -- DONE''1"
zpty -r z ignored '*DONE1*' || exit 1
zpty -d z
grep -v '^$' $out
exit 0
