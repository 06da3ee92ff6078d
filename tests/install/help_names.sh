# tests/install/help_names.sh - sourced: what `txlc --help` and `txlc CMD --help` list, for the install tests.
#   help_commands TXLC       the commands, one a line
#   help_flags TXLC CMD      the flags of CMD (every spelling: -t, --threads), one a line, -h and --help left out

help_commands() {
  "$1" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'
}

help_flags() {
  "$1" "$2" --help | awk '/^Options:/ { on = 1; next } on && /^  -/ { print $1 }' | tr ',' '\n' |
    grep -E '^--?[A-Za-z0-9]' | grep -vxE -- '-h|--help'
}
