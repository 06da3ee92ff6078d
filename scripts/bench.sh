#!/usr/bin/env bash
# scripts/bench.sh - the performance benchmarks of docs/PERFORMANCE.md, each
# run several times (a fresh txlc process per run, in rounds of all of them),
# reported as the median of every figure over the runs: the reproducible form
# of `txlc bench`.
#
# Usage: scripts/bench.sh [--threads T] [--repeat N] [--segments S] [--precision LIST] [--txlc PATH]
#                         [--reference DIR] [--write FILE]
#   defaults: 2 threads, 3 runs, 10 timed segments (20 at qlen 1), precision
#   f32, build/tools/txlc. --precision f32,bf16 runs every benchmark at each
#   precision within each round (alternated, so a slow spell hits all of them)
#   and adds the ratio of tokens/s to f32's in the same rounds.
#   --reference DIR also times the authors' PyTorch code (DIR: the pytorch/
#   directory of a clone of https://github.com/kimiyoung/transformer-xl) on
#   the rows issue 39 states ratios for, once per round between the txlc runs
#   of that row, with bench/reference_bench.py under Debian's /usr/bin/python3
#   (python3-torch), OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for that
#   command alone; it adds "reference" rows, and the "× reference" column
#   gives each row's tokens/s over the reference's median of the same rounds
#   ("-" for rows without one, and every row without --reference).
# Prints one Markdown table on stdout (progress on stderr); --write FILE also
# puts it, with the command, commit, date and machine, between FILE's lines
# `<!-- scripts/bench.sh: begin -->` and `<!-- scripts/bench.sh: end -->`
# (docs/PERFORMANCE.md's current figures), replacing what was there. Run it on a quiet
# machine: OpenMP threads that share a core with another process wait out its
# time slices, and the figures then measure the scheduler.
set -euo pipefail
cd "$(dirname "$0")/.."

threads=2 repeat=3 segments=10 txlc=build/tools/txlc precisions=f32 write="" reference="" reference_given=""
command_line="scripts/bench.sh $*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --write) write="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --segments) segments="$2"; shift 2 ;;
    --precision) precisions="$2"; shift 2 ;;
    --txlc) txlc="$2"; shift 2 ;;
    --reference) reference="${2-}" reference_given=1; shift $(($# > 1 ? 2 : 1)) ;;
    *) echo "scripts/bench.sh: unknown option '$1'; expected --threads, --repeat, --segments, --precision, --txlc, --reference or --write" >&2; exit 2 ;;
  esac
done
# The reference command: Debian's interpreter (its python3-torch), without the
# OpenBLAS core overrides some machines set for older OpenBLAS builds, which
# would slow the current one torch calls.
reference_python=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/reference_bench.py)
if [[ -n $reference_given ]]; then
  [[ -n $reference ]] || { echo "scripts/bench.sh: --reference: expected a directory (the pytorch/ directory of a clone of https://github.com/kimiyoung/transformer-xl)" >&2; exit 2; }
  [[ -x /usr/bin/python3 ]] || { echo "scripts/bench.sh: --reference: /usr/bin/python3 not found (Debian's python3 with python3-torch)" >&2; exit 2; }
  # Every failure the reference could meet before its first timing (the
  # directory, torch, the authors' imports, the spec) ends here, in one line.
  if ! check=$("${reference_python[@]}" --authors-code "$reference" bench/enwik8_base.json --check 2>&1 >/dev/null); then
    echo "scripts/bench.sh: --reference $reference: $(tail -n 1 <<<"$check")" >&2
    exit 2
  fi
fi
[[ -x "$txlc" ]] || { echo "scripts/bench.sh: $txlc: not an executable (build first: scripts/test.sh)" >&2; exit 2; }
if [[ -n $write ]]; then
  [[ -f $write ]] && grep -qx '<!-- scripts/bench.sh: begin -->' "$write" && grep -qx '<!-- scripts/bench.sh: end -->' "$write" ||
    { echo "scripts/bench.sh: --write $write: expected a file with the lines '<!-- scripts/bench.sh: begin -->' and '<!-- scripts/bench.sh: end -->'" >&2; exit 2; }
fi
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)

# name | arguments | for a batched one-token row, the index of its batch-1 row
# (the "× batch 1" column: its tokens/s over that row's, beside the bound
# the memory floors give: batch × floor(batch 1) / floor(batch), the weights
# read once per batch and every stream's memory once per token) | "reference"
# for the rows issue 39 states ratios against the authors' code for (timed
# with --reference; bench/reference_bench.py takes the same arguments)
benchmarks=(
  "enwik8 base, qlen 80, mem 2100|bench/enwik8_base.json --segments $segments||reference"
  "enwik8 base, qlen 1, mem 2100|bench/enwik8_base.json --qlen 1 --segments $((2 * segments))||reference"
  "enwik8 base, qlen 1, batch 8, mem 2100|bench/enwik8_base.json --qlen 1 --batch 8 --segments $((2 * segments))|1|"
  "enwik8 base, qlen 1, batch 32, mem 2100|bench/enwik8_base.json --qlen 1 --batch 32 --segments $((2 * segments))|1|"
  "enwik8 base, qlen 1, mem 512|bench/enwik8_base.json --qlen 1 --mem-len 512 --segments $((2 * segments))||"
  "enwik8 base, qlen 1, batch 8, mem 512|bench/enwik8_base.json --qlen 1 --batch 8 --mem-len 512 --segments $((2 * segments))|4|"
  "WT103 base + NLL, qlen 64, mem 640|bench/wt103_base.json --nll --segments $segments||reference"
  "small, batch 8, qlen 128, mem 128|bench/small_b8.json --batch 8 --segments $segments||"
)
keys=(tokens_per_s ms_per_segment avg_ms p90_ms p95_ms p99_ms efficiency memory_floor_ratio memory_floor_ms peak_rss_bytes
  rss_budget_bytes)

# The value of column $1 in the one-row CSV report $2 (empty: "-").
field() { awk -F, -v k="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i } NR == 2 { v = c ? $c : ""; print (v == "" ? "-" : v) }' "$2"; }
median() { tr ' ' '\n' | grep -v '^-*$' | grep -v null | sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2}'; }

IFS=, read -r -a precision_list <<<"$precisions"
for p in "${precision_list[@]}"; do
  [[ $p == f32 || $p == bf16 || $p == int8 ]] ||
    { echo "scripts/bench.sh: --precision: '$p' is not a precision; expected f32, bf16 or int8 (comma-separated)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Rounds: every benchmark at every precision once per round, so that a slow
# spell of a shared machine lands in one run of each rather than in all runs
# of one.
declare -A values=()  # "benchmark index,precision,key" -> the values of the runs, space-separated
reference_torch=""  # torch's version and the BLAS library, as the reference runs report them
for ((r = 1; r <= repeat; r++)); do
  for i in "${!benchmarks[@]}"; do
    IFS='|' read -r name args _ has_reference <<<"${benchmarks[$i]}"
    for p in "${precision_list[@]}"; do
      echo "scripts/bench.sh: round $r of $repeat: $name, $p" >&2
      # shellcheck disable=SC2086
      "$txlc" bench $args --random-weights --prefill --threads "$threads" --repetitions 1 --precision "$p" \
        --format csv >"$tmp/out.csv"
      for k in "${keys[@]}"; do values[$i,$p,$k]+="$(field "$k" "$tmp/out.csv") "; done
    done
    if [[ -n $reference && -n $has_reference ]]; then
      echo "scripts/bench.sh: round $r of $repeat: $name, the authors' code" >&2
      # shellcheck disable=SC2086
      "${reference_python[@]}" --authors-code "$reference" $args --threads "$threads" >"$tmp/out.csv" ||
        { echo "scripts/bench.sh: --reference $reference: bench/reference_bench.py failed on '$name' (its message above)" >&2; exit 1; }
      for k in "${keys[@]}"; do values[$i,reference,$k]+="$(field "$k" "$tmp/out.csv") "; done
      reference_torch="torch $(field torch "$tmp/out.csv"), BLAS $(field blas "$tmp/out.csv")"
    fi
  done
done

# $1 formatted with printf format $2, "-" kept.
num() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "-" || v == "") print "-"; else printf f, v }'; }
table() {
  echo "| benchmark | precision | threads | runs | tokens/s | × f32 | × reference | × batch 1 (bound) | median ms | avg ms | p90 ms | p95 ms | p99 ms | efficiency | time / memory floor | peak RSS MiB | budget MiB |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for i in "${!benchmarks[@]}"; do
    IFS='|' read -r name _ single _ <<<"${benchmarks[$i]}"
    rows=("${precision_list[@]}")
    [[ -n ${values[$i,reference,tokens_per_s]:-} ]] && rows+=(reference)
    for p in "${rows[@]}"; do
      med() { echo "${values[$i,$p,$1]}" | median; }
      mib() { awk -v b="$(med "$1")" 'BEGIN { if (b == "-") print "-"; else printf "%.1f", b / 1048576 }'; }
      # This row's median tokens/s over row $1's (a precision or "reference") in the same rounds, "-" without $1's runs.
      over() {
        if [[ -z ${values[$i,$1,tokens_per_s]:-} ]]; then echo "-"; return; fi
        awk -v a="$(med tokens_per_s)" -v b="$(echo "${values[$i,$1,tokens_per_s]}" | median)" \
          'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'
      }
      ratio=$(over f32) reference_ratio=$(over reference)
      [[ $p == reference ]] && ratio="-"
      batched="-"
      if [[ -n $single && $p != reference ]]; then
        batch=$(sed -E 's/.*--batch ([0-9]+).*/\1/' <<<"${benchmarks[$i]}")
        batched=$(awk -v a="$(med tokens_per_s)" -v b="$(echo "${values[$single,$p,tokens_per_s]}" | median)" \
          -v f="$(med memory_floor_ms)" -v f1="$(echo "${values[$single,$p,memory_floor_ms]}" | median)" -v n="$batch" \
          'BEGIN { printf "%.2f", a / b; if (f != "-" && f1 != "-" && f > 0) printf " (%.2f)", n * f1 / f }')
      fi
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$name" "$p" \
        "$threads" "$repeat" "$(num "$(med tokens_per_s)" %.1f)" "$ratio" "$reference_ratio" "$batched" \
        "$(num "$(med ms_per_segment)" %.2f)" "$(num "$(med avg_ms)" %.2f)" "$(num "$(med p90_ms)" %.2f)" \
        "$(num "$(med p95_ms)" %.2f)" "$(num "$(med p99_ms)" %.2f)" "$(num "$(med efficiency)" %.3f)" \
        "$(num "$(med memory_floor_ratio)" %.2f)" "$(mib peak_rss_bytes)" "$(mib rss_budget_bytes)"
    done
  done
}
table >"$tmp/table.md"
cat "$tmp/table.md"
if [[ -n $write ]]; then
  {
    echo "\`$command_line\` on $(git rev-parse --short HEAD 2>/dev/null || echo "an unknown commit")$(git diff --quiet HEAD 2>/dev/null || echo " with changes"), $(date -u +%Y-%m-%d),"
    echo "$(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), load average $load_at_start at the start$(
      [[ -n $reference_torch ]] && echo "; the reference: the authors' MemTransformerLM (bench/reference_bench.py), $reference_torch"):"
    echo
    cat "$tmp/table.md"
  } >"$tmp/section.md"
  awk -v section="$tmp/section.md" '
    $0 == "<!-- scripts/bench.sh: end -->" { while ((getline line < section) > 0) print line; print ""; skip = 0 }
    !skip { print }
    $0 == "<!-- scripts/bench.sh: begin -->" { skip = 1; print "" }' "$write" >"$tmp/doc.md"
  cp "$tmp/doc.md" "$write.tmp.$$" && mv "$write.tmp.$$" "$write"
  echo "scripts/bench.sh: wrote the table into $write" >&2
fi
