#!/bin/sh
# tests/tools/node_ids_test.sh TXLC MODEL [FLAGS...] - the memory plan and bench --profile name the nodes of inspect's graph.
#
# Every buffer label of `txlc inspect MODEL --memory-plan FLAGS` names a node
# as "op (%N, type)"; `txlc inspect MODEL FLAGS` must print that %N with the
# same op and type. At least one label must be checked.
set -u
TXLC=$1
shift
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TXLC" inspect "$@" > "$T/graph.txt" 2> "$T/err" || { cat "$T/err"; exit 1; }
"$TXLC" inspect "$@" --memory-plan > "$T/plan.txt" 2> "$T/err" || { cat "$T/err"; exit 1; }
python3 - "$T/graph.txt" "$T/plan.txt" <<'PY'
import re, sys
graph, plan = (open(p).read() for p in sys.argv[1:3])
nodes = {}
for line in graph.splitlines():
    m = re.match(r"\s*(%\d+) = (\w+)\(.*: (\S+)$", line)
    if m:
        nodes[m.group(1)] = (m.group(2), m.group(3))
labels = re.findall(r"(\w+) \((%\d+), ([^)]*)\)", plan)
bad = [(op, n, t, nodes.get(n)) for op, n, t in labels if nodes.get(n) != (op, t)]
assert labels, "no node labels in the memory plan:\n" + plan[:2000]
assert "node " not in plan, "a label names a node by its id: " + plan[plan.index("node "):][:200]
assert not bad, "labels that are not inspect's nodes (op, %N, type, inspect's): %s" % bad[:5]
print("%d labels name inspect's nodes" % len(labels))
PY

# bench --profile (at the model's own setting, whatever FLAGS say) names its
# steps' nodes by the same listing: without --nll it
# times the segment of --outputs hidden (against a full memory: --prefill).
"$TXLC" inspect "$1" --outputs hidden > "$T/hidden.txt" 2> "$T/err" || { cat "$T/err"; exit 1; }
case "$1" in *.json) weights=--random-weights ;; *) weights= ;; esac
"$TXLC" bench "$1" $weights --profile --prefill --segments 2 --repetitions 1 --no-probe --threads 1 --format json > "$T/bench.json" \
  2> "$T/err" || { cat "$T/err"; exit 1; }
python3 - "$T/hidden.txt" "$T/bench.json" <<'PY'
import json, re, sys
nodes = {}
for line in open(sys.argv[1]).read().splitlines():
    m = re.match(r"\s*(%\d+) = (\w+)\(", line)
    if m:
        nodes[m.group(1)] = m.group(2)
rows = json.load(open(sys.argv[2]))[0]["profile"]
named = [r for r in rows if r["node"].startswith("%")]
bad = [(r["op"], r["node"], nodes.get(r["node"])) for r in named if nodes.get(r["node"]) != r["op"]]
assert named, "no profile step names a node: %s" % rows[:3]
assert not bad, "profile steps that are not inspect's nodes (op, %%N, inspect's op): %s" % bad[:5]
print("%d profile steps name inspect's nodes" % len(named))
PY
