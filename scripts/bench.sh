#!/usr/bin/env bash
# scripts/bench.sh - the performance benchmarks of docs/PERFORMANCE.md, each
# run several times (a fresh txlc process per run, in rounds of all of them),
# reported as the median of every figure over the runs: the reproducible form
# of `txlc bench`.
#
# Usage: scripts/bench.sh [--threads T] [--repeat N] [--segments S] [--precision LIST] [--txlc PATH] [--write FILE]
#   defaults: 2 threads, 3 runs, 10 timed segments (20 at qlen 1), precision
#   f32, build/tools/txlc. --precision f32,bf16 runs every benchmark at each
#   precision within each round (alternated, so a slow spell hits all of them)
#   and adds the ratio of tokens/s to f32's in the same rounds.
# Prints one Markdown table on stdout (progress on stderr); --write FILE also
# puts it, with the command, commit, date and machine, between FILE's lines
# `<!-- scripts/bench.sh: begin -->` and `<!-- scripts/bench.sh: end -->`
# (docs/PERFORMANCE.md's current figures), replacing what was there. Run it on a quiet
# machine: OpenMP threads that share a core with another process wait out its
# time slices, and the figures then measure the scheduler.
set -euo pipefail
cd "$(dirname "$0")/.."

threads=2 repeat=3 segments=10 txlc=build/tools/txlc precisions=f32 write=""
command_line="scripts/bench.sh $*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --write) write="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --segments) segments="$2"; shift 2 ;;
    --precision) precisions="$2"; shift 2 ;;
    --txlc) txlc="$2"; shift 2 ;;
    *) echo "scripts/bench.sh: unknown option '$1'; expected --threads, --repeat, --segments, --precision, --txlc or --write" >&2; exit 2 ;;
  esac
done
[[ -x "$txlc" ]] || { echo "scripts/bench.sh: $txlc: not an executable (build first: scripts/test.sh)" >&2; exit 2; }
if [[ -n $write ]]; then
  [[ -f $write ]] && grep -qx '<!-- scripts/bench.sh: begin -->' "$write" && grep -qx '<!-- scripts/bench.sh: end -->' "$write" ||
    { echo "scripts/bench.sh: --write $write: expected a file with the lines '<!-- scripts/bench.sh: begin -->' and '<!-- scripts/bench.sh: end -->'" >&2; exit 2; }
fi
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)

# name | arguments | for a batched one-token row, the index of its batch-1 row
# (the "× batch 1" column: its tokens/s over that row's, beside the bound
# the memory floors give: batch × floor(batch 1) / floor(batch), the weights
# read once per batch and every stream's memory once per token)
benchmarks=(
  "enwik8 base, qlen 80, mem 2100|bench/enwik8_base.json --segments $segments|"
  "enwik8 base, qlen 1, mem 2100|bench/enwik8_base.json --qlen 1 --segments $((2 * segments))|"
  "enwik8 base, qlen 1, batch 8, mem 2100|bench/enwik8_base.json --qlen 1 --batch 8 --segments $((2 * segments))|1"
  "enwik8 base, qlen 1, batch 32, mem 2100|bench/enwik8_base.json --qlen 1 --batch 32 --segments $((2 * segments))|1"
  "enwik8 base, qlen 1, mem 512|bench/enwik8_base.json --qlen 1 --mem-len 512 --segments $((2 * segments))|"
  "enwik8 base, qlen 1, batch 8, mem 512|bench/enwik8_base.json --qlen 1 --batch 8 --mem-len 512 --segments $((2 * segments))|4"
  "WT103 base + NLL, qlen 64, mem 640|bench/wt103_base.json --nll --segments $segments|"
  "small, batch 8, qlen 128, mem 128|bench/small_b8.json --batch 8 --segments $segments|"
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
for ((r = 1; r <= repeat; r++)); do
  for i in "${!benchmarks[@]}"; do
    b=${benchmarks[$i]}
    name="${b%%|*}" args="${b#*|}" args="${args%|*}"
    for p in "${precision_list[@]}"; do
      echo "scripts/bench.sh: round $r of $repeat: $name, $p" >&2
      # shellcheck disable=SC2086
      "$txlc" bench $args --random-weights --prefill --threads "$threads" --repetitions 1 --precision "$p" \
        --format csv >"$tmp/out.csv"
      for k in "${keys[@]}"; do values[$i,$p,$k]+="$(field "$k" "$tmp/out.csv") "; done
    done
  done
done

table() {
  echo "| benchmark | precision | threads | runs | tokens/s | × f32 | × batch 1 (bound) | median ms | avg ms | p90 ms | p95 ms | p99 ms | efficiency | time / memory floor | peak RSS MiB | budget MiB |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for i in "${!benchmarks[@]}"; do
    name="${benchmarks[$i]%%|*}" single="${benchmarks[$i]##*|}"
    for p in "${precision_list[@]}"; do
      med() { echo "${values[$i,$p,$1]}" | median; }
      mib() { awk -v b="$(med "$1")" 'BEGIN { if (b == "-") print "-"; else printf "%.1f", b / 1048576 }'; }
      ratio="-"
      if [[ -n ${values[$i,f32,tokens_per_s]:-} ]]; then
        ratio=$(awk -v a="$(med tokens_per_s)" -v b="$(echo "${values[$i,f32,tokens_per_s]}" | median)" \
          'BEGIN { printf "%.2f", a / b }')
      fi
      batched="-"
      if [[ -n $single ]]; then
        batch=$(sed -E 's/.*--batch ([0-9]+).*/\1/' <<<"${benchmarks[$i]}")
        batched=$(awk -v a="$(med tokens_per_s)" -v b="$(echo "${values[$single,$p,tokens_per_s]}" | median)" \
          -v f="$(med memory_floor_ms)" -v f1="$(echo "${values[$single,$p,memory_floor_ms]}" | median)" -v n="$batch" \
          'BEGIN { printf "%.2f", a / b; if (f != "-" && f1 != "-" && f > 0) printf " (%.2f)", n * f1 / f }')
      fi
      printf "| %s | %s | %s | %s | %.1f | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f | %s | %s | %s |\n" "$name" "$p" \
        "$threads" "$repeat" "$(med tokens_per_s)" "$ratio" "$batched" "$(med ms_per_segment)" "$(med avg_ms)" "$(med p90_ms)" \
        "$(med p95_ms)" "$(med p99_ms)" "$(med efficiency)" \
        "$(med memory_floor_ratio | awk '{ if ($1 == "-") print "-"; else printf "%.2f", $1 }')" \
        "$(mib peak_rss_bytes)" "$(mib rss_budget_bytes)"
    done
  done
}
table >"$tmp/table.md"
cat "$tmp/table.md"
if [[ -n $write ]]; then
  {
    echo "\`$command_line\` on $(git rev-parse --short HEAD 2>/dev/null || echo "an unknown commit")$(git diff --quiet HEAD 2>/dev/null || echo " with changes"), $(date -u +%Y-%m-%d),"
    echo "$(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), load average $load_at_start at the start:"
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
