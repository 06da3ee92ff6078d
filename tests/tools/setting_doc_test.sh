#!/bin/sh
# docs/DRIVER.md's setting table names every field of driver::Setting
# (driver/setting.h), and no field the struct does not have.
#   setting_doc_test.sh SOURCE_DIR
set -u
src=$1
# A member line: "  TYPE name [= value];  // comment" (comments, then the initializer, dropped).
fields=$(sed -n '/^struct Setting {/,/^};/p' "$src/driver/setting.h" | grep -v '^ *//' | sed 's|//.*||' |
  grep '^  [^ ].*;' | sed 's/ = .*//; s/;.*//; s/.* //' | sort)
documented=$(sed -n '/^## The setting/,/^## /p' "$src/docs/DRIVER.md" |
  sed -n 's/^| `\([a-zA-Z_][a-zA-Z_0-9]*\)` |.*/\1/p' | sort)
[ -n "$fields" ] || { echo "setting_doc_test: no fields found in driver/setting.h's struct Setting" >&2; exit 1; }
if [ "$fields" != "$documented" ]; then
  echo "setting_doc_test: docs/DRIVER.md's setting table and driver::Setting differ:" >&2
  printf '%s\n' "$fields" >"${TMPDIR:-/tmp}/setting_fields.$$"
  printf '%s\n' "$documented" | diff -u "${TMPDIR:-/tmp}/setting_fields.$$" - | sed 's/^/  /' >&2
  rm -f "${TMPDIR:-/tmp}/setting_fields.$$"
  echo "  (- a field the table lacks, + a row with no field)" >&2
  exit 1
fi
