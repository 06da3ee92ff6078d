#!/usr/bin/env bash
# bench/contention.sh - threads on a loaded machine: every benchmark spec and
# bundled model timed with 1 thread and with 2, on an idle machine and beside
# a CPU hog (a shell busy loop holding one core), the variants alternated in
# rounds. Reports the 2-thread / 1-thread time ratio per benchmark and
# condition; the goal (docs/PERFORMANCE.md, "Threads on a loaded machine") is
# that beside the hog 2 threads are never more than 1.5x slower than 1.
#
# Usage: bench/contention.sh [--txlc PATH] [--rounds N] [--quick] [--precision LIST] [--only PATTERN]
#   defaults: build/tools/txlc, 3 rounds, f32; --quick: 1 round, fewer
#   segments; --precision f32,bf16,int8: a row per benchmark and precision;
#   --only: the benchmarks whose name matches the extended regular
#   expression PATTERN (e.g. 'enwik8|WT103').
# Prints one Markdown table on stdout (progress on stderr); exit status 1 when
# a loaded ratio exceeds 1.5. Start it on a quiet machine (load average below
# 0.5): the idle figures are then the machine's, the loaded ones the hog's.
set -euo pipefail
cd "$(dirname "$0")/.."

txlc=build/tools/txlc rounds=3 segments=10 precisions=f32 only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --txlc) txlc="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --quick) rounds=1 segments=4; shift ;;
    --precision) precisions="${2-}"; shift $(($# > 1 ? 2 : 1)) ;;
    --only) only="${2-}"; shift $(($# > 1 ? 2 : 1)) ;;
    *) echo "bench/contention.sh: unknown option '$1'; expected --txlc, --rounds, --quick, --precision or --only" >&2; exit 2 ;;
  esac
done
[[ "$precisions" =~ ^(f32|bf16|int8)(,(f32|bf16|int8))*$ ]] ||
  { echo "bench/contention.sh: --precision: expected a comma-separated list of f32, bf16, int8, got '$precisions'" >&2; exit 2; }
IFS=, read -r -a precision_list <<<"$precisions"
[[ -x "$txlc" ]] || { echo "bench/contention.sh: $txlc: not an executable (build first: scripts/test.sh)" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/contention.sh: --rounds: expected a positive integer, got '$rounds'" >&2; exit 2; }

# name | arguments of `txlc bench`
benchmarks=(
  "kjv-char, qlen 64|models/kjv-char --segments $segments"
  "kjv-char, qlen 1|models/kjv-char --qlen 1 --segments $((4 * segments))"
  "kjv-words, qlen 64|models/kjv-words --segments $segments"
  "kjv-words, qlen 1|models/kjv-words --qlen 1 --segments $((4 * segments))"
  "small, batch 8, qlen 128|bench/small_b8.json --random-weights --batch 8 --segments $segments"
  "enwik8 base, qlen 80|bench/enwik8_base.json --random-weights --segments $segments"
  "enwik8 base, qlen 1|bench/enwik8_base.json --random-weights --qlen 1 --segments $((2 * segments))"
  "WT103 base + NLL, qlen 64|bench/wt103_base.json --random-weights --nll --segments $segments"
)
if [[ -n "$only" ]]; then
  kept=()
  for b in "${benchmarks[@]}"; do
    if [[ "${b%%|*}" =~ $only ]]; then kept+=("$b"); fi
  done
  [[ ${#kept[@]} -gt 0 ]] || { echo "bench/contention.sh: --only '$only' matches no benchmark" >&2; exit 2; }
  benchmarks=("${kept[@]}")
fi

tmp=$(mktemp -d)
hog=""
stop_hog() { if [[ -n "$hog" ]]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=""; fi; }
trap 'stop_hog; rm -rf "$tmp"' EXIT
start_hog() { bash -c 'while :; do :; done' & hog=$!; sleep 0.5; }

# The median of `ms_per_segment` of one `txlc bench` run with $1 threads.
time_one() {
  local threads="$1"; shift
  # shellcheck disable=SC2086,SC2048
  "$txlc" bench $* --prefill --threads "$threads" --repetitions 3 --no-probe --format csv >"$tmp/out.csv" 2>"$tmp/err" ||
    { echo "bench/contention.sh: txlc bench $* failed:" >&2; cat "$tmp/err" >&2; exit 2; }
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ms_per_segment") c = i } NR == 2 { print $c }' "$tmp/out.csv"
}
# The median of the figures in $*, with three significant digits.
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3g\n", m}'; }

declare -A ms=()  # "benchmark index,precision,condition,threads" -> the runs' figures, space-separated
for ((r = 1; r <= rounds; r++)); do
  for condition in idle loaded; do
    [[ $condition == loaded ]] && start_hog
    for i in "${!benchmarks[@]}"; do
      b=${benchmarks[$i]}
      for p in "${precision_list[@]}"; do
        echo "bench/contention.sh: round $r of $rounds, $condition: ${b%%|*}, $p" >&2
        for threads in 1 2; do ms[$i,$p,$condition,$threads]+="$(time_one "$threads" "${b#*|} --precision $p") "; done
      done
    done
    stop_hog
  done
done

status=0
echo "| benchmark | precision | idle 1T ms | idle 2T ms | idle 2T/1T | loaded 1T ms | loaded 2T ms | loaded 2T/1T |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for i in "${!benchmarks[@]}"; do
  for p in "${precision_list[@]}"; do
    row="| ${benchmarks[$i]%%|*} | $p |"
    for condition in idle loaded; do
      one=$(echo "${ms[$i,$p,$condition,1]}" | median) two=$(echo "${ms[$i,$p,$condition,2]}" | median)
      ratio=$(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2f", a / b }')
      row+=" $one | $two | $ratio |"
      if [[ $condition == loaded ]] && awk -v r="$ratio" 'BEGIN { exit !(r > 1.5) }'; then status=1; fi
    done
    echo "$row"
  done
done
[[ $status == 0 ]] || echo "bench/contention.sh: a loaded 2-thread run is more than 1.5x slower than 1 thread" >&2
exit $status
