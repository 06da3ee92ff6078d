#!/usr/bin/env bash
# bench/mpi_scale.sh [--force] [ROUNDS] - 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread.
#
# A benchmark, not a test: on a corpus of short documents (the lines of
# models/kjv-char/valid.txt, twice, cut to 100 characters) with --documents,
# and on one long text (valid.txt) cut into --batch 8 streams, prints
# documents/s and tokens/s of each variant (the median of ROUNDS rounds,
# default 3, the variants alternating within a round) and the ratio of
# 2 ranks x 1 thread to 1 rank x 1 thread. The rates are txlc's own (the
# scoring loop: the summary's documents_per_second and tokens_per_second,
# --json's tokens / seconds), without process start-up and planning.
# Refuses to start while the 1-minute load average is 0.5 or more (the
# figures would measure the other jobs), unless --force.
# Needs a build with MPI (build/tools/txlc) and mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
force=0
if [[ "${1:-}" == "--force" ]]; then
  force=1
  shift
fi
rounds=${1:-3}
TXLC=${TXLC:-build/tools/txlc}
M=models/kjv-char
load=$(cut -d' ' -f1 /proc/loadavg)
if [[ $force -eq 0 ]] && awk -v l="$load" 'BEGIN { exit !(l >= 0.5) }'; then
  echo "mpi_scale: the load average is $load (>= 0.5): not measuring (--force to measure anyway)" >&2
  exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
{ cat "$M/valid.txt"; cat "$M/valid.txt"; } | cut -c1-100 > "$T/docs.txt"
echo "mpi_scale: $(wc -l < "$T/docs.txt") documents, $(wc -c < "$M/valid.txt") characters of text; $(nproc) cores;" \
  "load $load; $rounds rounds" >&2

run() {  # run VARIANT MODE -> "documents/s tokens/s"
  local variant=$1 mode=$2 ranks threads
  ranks=${variant%x*}
  threads=${variant#*x}
  local launch=("$TXLC")
  [[ $ranks -gt 1 ]] && launch=(mpirun --bind-to core -np "$ranks" "$TXLC")
  if [[ $mode == docs ]]; then
    "${launch[@]}" score "$M" --documents "$T/docs.txt" --batch 8 --threads "$threads" -o "$T/out.jsonl" \
      --summary "$T/s.json" 2>/dev/null
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["documents_per_second"], s["tokens_per_second"])' \
      "$T/s.json"
  else
    "${launch[@]}" score "$M" "$M/valid.txt" --batch 8 --threads "$threads" --json > "$T/s.json" 2>/dev/null
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(0, s["tokens"] / s["seconds"])' "$T/s.json"
  fi
}

variants=(1x1 1x2 2x1)
declare -A docs_d docs_t text_t
for ((r = 0; r < rounds; ++r)); do
  for v in "${variants[@]}"; do
    read -r d t < <(run "$v" docs)
    docs_d[$v]+="$d "
    docs_t[$v]+="$t "
    read -r _ t < <(run "$v" text)
    text_t[$v]+="$t "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '%-22s %14s %14s %18s\n' "ranks x threads" "documents/s" "doc tokens/s" "text tokens/s"
for v in "${variants[@]}"; do
  printf '%-22s %14.1f %14.0f %18.0f\n' "$v" "$(median <<< "${docs_d[$v]}")" "$(median <<< "${docs_t[$v]}")" \
    "$(median <<< "${text_t[$v]}")"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "2x1 / 1x1: documents $(ratio "$(median <<< "${docs_d[2x1]}")" "$(median <<< "${docs_d[1x1]}")")," \
  "long text $(ratio "$(median <<< "${text_t[2x1]}")" "$(median <<< "${text_t[1x1]}")") (target >= 1.8)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
