#!/bin/bash
# tests/tools/interrupt_test.sh TXLC MODELS_DIR - real SIGINT/SIGTERM sent to real txlc processes.
#
# score (text and --json) prints the totals so far marked partial and exits
# 128 + the signal; generate ends its line and prints its timing line; run
# -o FILE leaves neither FILE nor a temporary behind; score --documents keeps
# FILE.partial and a summary marked interrupted. The signal is sent once
# the first progress line is out (score) or output has started, not after a
# fixed sleep.
set -u
set -m  # background jobs keep SIGINT (a non-interactive shell ignores it for them)
TXLC=$1
M=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for i in 1 2 3 4 5 6 7 8; do cat "$M/kjv-char/valid.txt"; done > "$T/big.txt"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# wait_for FILE PATTERN PID: until FILE holds PATTERN (or the process ended), at most 60 s.
wait_for() {
  for _ in $(seq 600); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

for sig in INT TERM; do
  want=$([ $sig = INT ] && echo 130 || echo 143)
  # score --json
  "$TXLC" score "$M/kjv-char" "$T/big.txt" --progress --json --per-token > "$T/out.json" 2> "$T/err" &
  pid=$!
  wait_for "$T/err" "tokens/s" $pid || bad "score --json $sig: no progress line: $(head -c 300 "$T/err")"
  kill -$sig $pid
  wait $pid
  code=$?
  [ $code = $want ] || bad "score --json SIG$sig: exit $code, expected $want"
  python3 - "$T/out.json" <<'PY' || bad "score --json SIG$sig: not a partial JSON result"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True, d
assert 0 < d["tokens"] < d["tokens_total"], d
assert d["nll_stderr"] > 0 and d["perplexity"] > 1, d
# --per-token: the NLLs of the tokens scored, which add up to the partial total.
per = d["per_token_nll"]
assert len(per) == d["tokens"], (len(per), d["tokens"])
assert abs(sum(per) - d["nll_sum"]) <= 1e-4 * d["nll_sum"], (sum(per), d["nll_sum"])
PY
  grep -q "interrupted by SIG$sig" "$T/err" || bad "score --json SIG$sig: no interrupted line on stderr"
  # score, text
  "$TXLC" score "$M/kjv-char" "$T/big.txt" --progress --per-token --batch 2 > "$T/out.txt" 2> "$T/err" &
  pid=$!
  wait_for "$T/err" "tokens/s" $pid || bad "score $sig: no progress line"
  kill -$sig $pid
  wait $pid
  code=$?
  [ $code = $want ] || bad "score SIG$sig: exit $code, expected $want"
  grep -q "^partial " "$T/out.txt" || bad "score SIG$sig: text output not marked partial: $(head -c 300 "$T/out.txt")"
  grep -q "^estimate (partial): perplexity [0-9.]* ± [0-9.]*$" "$T/out.txt" || bad "score SIG$sig: no partial estimate line"
  grep -q "tokens/s" "$T/out.txt" && bad "score SIG$sig: progress on stdout"
  # --per-token: one line per token scored, positions 1..N/2 of both streams.
  python3 - "$T/out.txt" <<'PY' || bad "score SIG$sig: the per-token lines do not match the partial totals"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
rows = [l.split("\t") for l in lines if l.count("\t") == 3]
kv = dict(l.split(" ", 1) for l in lines if l and "\t" not in l and " " in l)
n = int(kv["tokens"])
assert len(rows) == n > 0, (len(rows), n)
for b in (0, 1):
    assert [int(r[1]) for r in rows if r[0] == str(b)] == list(range(1, n // 2 + 1)), b
assert abs(sum(float(r[3]) for r in rows) - float(kv["nll_sum"])) <= 1e-4 * float(kv["nll_sum"])
PY
  # generate
  "$TXLC" generate "$M/kjv-char" --prompt "In the beginning" -n 100000000 > "$T/gen.txt" 2> "$T/err" &
  pid=$!
  for _ in $(seq 600); do [ "$(wc -c < "$T/gen.txt")" -gt 200 ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill -$sig $pid
  wait $pid
  code=$?
  [ $code = $want ] || bad "generate SIG$sig: exit $code, expected $want"
  [ "$(tail -c 1 "$T/gen.txt" | od -An -c | tr -d ' ')" = '\n' ] || bad "generate SIG$sig: the line is not ended"
  grep -q "txlc: generated [0-9]* tokens (interrupted) in" "$T/err" || bad "generate SIG$sig: no timing line: $(cat "$T/err")"
done

# run -o FILE: a signal while it runs leaves neither the file nor a temporary.
# 20,000 one-token segments take seconds, so the signal lands while it computes;
# should it land after the commit (a much faster machine), the file must be whole
# and nothing else left beside it.
for i in $(seq 20000); do printf '%d ' $((i % 70 + 1)); done > "$T/ids.txt"
mkdir "$T/out"
"$TXLC" run "$M/kjv-char" --tokens-file "$T/ids.txt" --qlen 1 --no-logprob -o "$T/out/run.json" 2> "$T/err" &
pid=$!
sleep 0.3
kill -TERM $pid
wait $pid
code=$?
[ $code = 0 ] || [ $code = 143 ] || bad "run SIGTERM: exit $code, expected 143"
if [ -e "$T/out/run.json" ]; then
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/out/run.json" || bad "run: a half-written output"
  [ "$(ls -A "$T/out")" = run.json ] || bad "run SIGTERM: left behind: $(ls -A "$T/out")"
else
  [ $code = 143 ] || bad "run: exit 0 without its output"
  [ -z "$(ls -A "$T/out")" ] || bad "run SIGTERM: left behind: $(ls -A "$T/out")"
fi
# score --documents -o FILE: the lines complete in order stay in FILE.partial, the
# summary is marked interrupted and counts them, FILE is not written.
for i in 1 2 3 4 5 6; do cut -c1-60 "$M/kjv-char/valid.txt"; done > "$T/docs.txt"
for sig in INT TERM; do
  want=$([ $sig = INT ] && echo 130 || echo 143)
  rm -f "$T/docs.jsonl" "$T/docs.jsonl.partial" "$T/summary.json"
  "$TXLC" score "$M/kjv-char" --documents "$T/docs.txt" --batch 4 -o "$T/docs.jsonl" --summary "$T/summary.json" \
    2> "$T/err" &
  pid=$!
  for _ in $(seq 600); do
    [ -s "$T/docs.jsonl.partial" ] && [ "$(wc -l < "$T/docs.jsonl.partial")" -gt 20 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  kill -$sig $pid
  wait $pid
  code=$?
  [ $code = $want ] || bad "score --documents SIG$sig: exit $code, expected $want"
  [ -e "$T/docs.jsonl" ] && bad "score --documents SIG$sig: wrote the output of an interrupted run"
  grep -q "interrupted by SIG$sig after [0-9]* of 9330 documents.*docs.jsonl.partial holds their lines" "$T/err" ||
    bad "score --documents SIG$sig: no interrupted line: $(cat "$T/err")"
  python3 - "$T/summary.json" "$T/docs.jsonl.partial" <<'PY' || bad "score --documents SIG$sig: the summary does not match FILE.partial"
import json, sys
d = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
assert d["interrupted"] is True and 0 < d["written"] == len(lines) < d["documents"], d
assert d["tokens"] == sum(l["tokens"] for l in lines), d
assert abs(d["nll_sum"] - sum(l["nll_sum"] for l in lines)) <= 1e-9 * d["nll_sum"], d
PY
done

[ $fail = 0 ] && echo "interrupts: all passed"
exit $fail
