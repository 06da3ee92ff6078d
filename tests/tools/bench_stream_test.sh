#!/bin/bash
# tests/tools/bench_stream_test.sh TXLC MODELS_DIR TINY_SPEC - txlc bench's sweep as it runs (docs/PERFORMANCE.md):
#
# 1. Rows stream: each case's row is printed (and flushed) when the case ends;
#    a SIGINT sent once the first row is out leaves that row, a valid --json
#    array, and exit 130, before the sweep is done.
# 2. Memory is checked per case with the case's own qlen: --batch 100000
#    --qlen 4096,1 skips the first case (named with qlen 4096 on stderr),
#    runs the second, and exits 3.
# 3. --precision f32,int8 sweeps precision: a precision column in md, csv, jsonl.
# 4. --plot FILE.svg is an SVG (parsed by xml.etree) with one series per
#    precision; no temporary is left beside it.
# 5. --profile --trace FILE.json is a trace of "X" events named as the profile's steps.
set -u
set -m  # background jobs keep SIGINT (a non-interactive shell ignores it for them)
TXLC=$1
M=$2
TINY=$3
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
QUICK="--random-weights --no-probe --threads 1 --warmup 0 --repetitions 1"

# 1. SIGINT after the first row: jsonl keeps its lines, --json stays one valid array, md its header and row.
for form in jsonl json md; do
  case $form in
    jsonl) fmt="--format jsonl"; first='"tokens_per_s"' ;;
    json) fmt="--json"; first='"tokens_per_s"' ;;
    md) fmt=""; first='^| .*kjv-char' ;;
  esac
  # shellcheck disable=SC2086
  "$TXLC" bench "$M/kjv-char" --no-probe --threads 1 --warmup 0 --repetitions 1 --segments 20 --qlen 64 \
    --batch 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 $fmt > "$T/out.$form" 2> "$T/err.$form" &
  pid=$!
  for _ in $(seq 300); do
    grep -q -- "$first" "$T/out.$form" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  grep -q -- "$first" "$T/out.$form" || bad "$form: no row before the sweep ended: $(head -c 300 "$T/err.$form")"
  kill -INT $pid 2>/dev/null
  wait $pid
  code=$?
  [ $code = 130 ] || bad "$form: exit $code after SIGINT, expected 130: $(tail -c 300 "$T/err.$form")"
  grep -q "interrupted by SIGINT after [0-9]* of 16 cases" "$T/err.$form" || bad "$form: no interrupted line on stderr"
  $PY - "$form" "$T/out.$form" <<'PY' || bad "$form: the rows printed before SIGINT are not whole"
import json, sys
form, path = sys.argv[1], sys.argv[2]
text = open(path).read()
if form == "jsonl":
    rows = [json.loads(l) for l in text.splitlines()]
elif form == "json":
    rows = json.loads(text)
else:
    lines = text.splitlines()
    assert lines[0].startswith("| model | backend | precision |"), lines[0]
    rows = [l for l in lines[2:] if "kjv-char" in l]
assert 1 <= len(rows) < 16, len(rows)
PY
done

# 2. Memory per case, with the case's own qlen: the first case is skipped, the second runs.
# shellcheck disable=SC2086
"$TXLC" bench "$TINY" $QUICK --segments 1 --batch 100000 --qlen 4096,1 --format jsonl > "$T/mem.jsonl" 2> "$T/mem.err"
code=$?
[ $code = 3 ] || bad "memory: exit $code, expected 3: $(cat "$T/mem.err")"
grep -q "case 1 of 2 skipped: .*batch 100000, qlen 4096, mem_len 16 needs at least .* of RAM" "$T/mem.err" ||
  bad "memory: no skip line naming qlen 4096: $(cat "$T/mem.err")"
grep -q "^txlc: error: .*1 of 2 cases skipped" "$T/mem.err" || bad "memory: no error line at the end"
$PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["batch"], r["qlen"]) for r in rows] == [(100000, 1)], rows
' "$T/mem.jsonl" || bad "memory: expected the one row of qlen 1: $(head -c 300 "$T/mem.jsonl")"

# 3-4. The precision sweep in every format, and its plot.
for fmt in md csv jsonl; do
  # shellcheck disable=SC2086
  "$TXLC" bench "$TINY" $QUICK --segments 2 --qlen 1,4 --precision f32,int8 --format $fmt \
    --plot "$T/plot-$fmt.svg" > "$T/p.$fmt" 2> "$T/p.err" || bad "precision $fmt: $(cat "$T/p.err")"
done
$PY - "$T" <<'PY' || bad "precision: no precision column, or not f32 and int8 in sweep order"
import csv, json, sys
T = sys.argv[1]
want = ["f32", "f32", "int8", "int8"]
rows = list(csv.DictReader(open(T + "/p.csv")))
assert [r["precision"] for r in rows] == want, rows
assert [r["qlen"] for r in rows] == ["1", "4", "1", "4"], rows
rows = [json.loads(l) for l in open(T + "/p.jsonl")]
assert [r["precision"] for r in rows] == want
lines = open(T + "/p.md").read().splitlines()
head = [c.strip() for c in lines[0].strip("|").split("|")]
col = head.index("precision")
cells = [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:6]]
assert [c[col] for c in cells] == want, cells
PY
$PY - "$T/plot-md.svg" <<'PY' || bad "plot: not the SVG expected"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
lines = root.findall(f".//{ns}polyline")
assert len(lines) == 2, len(lines)  # f32 and int8, each over qlen 1, 4
texts = [t.text for t in root.iter(ns + "text")]
assert "qlen" in texts and "precision f32" in texts and "precision int8" in texts, texts
assert len(root.findall(f".//{ns}circle")) == 4
PY
[ "$(find "$T" -name '.*txlc-*' | wc -l)" = 0 ] || bad "plot: a temporary file was left behind"

# 5. The trace of --profile.
# shellcheck disable=SC2086
"$TXLC" bench "$TINY" $QUICK --segments 3 --qlen 4 --profile --trace "$T/trace.json" --format jsonl \
  > "$T/prof.jsonl" 2> "$T/prof.err" || bad "trace: $(cat "$T/prof.err")"
$PY - "$T/trace.json" "$T/prof.jsonl" <<'PY' || bad "trace: not a trace of the profiled steps"
import json, sys
t = json.load(open(sys.argv[1]))
record = json.loads(open(sys.argv[2]).readline())
x = [e for e in t["traceEvents"] if e["ph"] == "X"]
steps = [e for e in x if e["name"] != "forward"]
forwards = [e for e in x if e["name"] == "forward"]
assert len(forwards) == 3, len(forwards)  # max(3, segments) profiled segments
names = {p["op"] + " " + p["node"] for p in record["profile"]}
assert len(steps) == 3 * len(record["profile"]), (len(steps), len(record["profile"]))
assert {e["name"] for e in steps} == names
for e in x:
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and e["dur"] >= 0, e
    assert e["pid"] == 1 and e["tid"] == 0
# Steps nest in their segment.
for f in forwards:
    inner = [e for e in steps if f["ts"] <= e["ts"] < f["ts"] + f["dur"]]
    assert len(inner) == len(record["profile"]), len(inner)
    assert inner[-1]["ts"] + inner[-1]["dur"] <= f["ts"] + f["dur"] + 1, (inner[-1], f)
PY

[ $fail = 0 ] && echo "bench: rows stream and survive SIGINT, memory per case, precision sweep, plot, trace"
exit $fail
