#!/usr/bin/env python3
# bench/python_overhead.py - what calling txlc from Python costs over calling it from C++.
#
# 1. Overhead of one Session.forward(): the wall time of the Python call (argument conversion, result
#    arrays, GIL release and reacquire, the copy of the outputs) against the time the same call spent in
#    the C++ backend::Session::forward inside it (Session._last_forward_ns), on the enwik8 base spec
#    (bench/enwik8_base.json, random weights) with a full memory of mem_len 2100, at qlen 80 and qlen 1.
#    The C++ figure is checked against `txlc bench` (the command line's harness) in the same run.
#    Measured twice: each call timed on its own (its clock readings included, which after a forward
#    that streamed the weights cost microseconds themselves), and the same calls in a plain loop
#    timed at its two ends, as timeit does (Session._forward_ns_total): that is the figure the
#    targets are stated for (docs/PYTHON.md, "Overhead").
# 2. Four Python threads, each its own session of one model, against the same four runs one after
#    the other: the GIL is released while a segment runs, so on 2 cores the threads overlap.
#
# 3. What the overhead is made of, on kjv-char at qlen 1 (its weights stay in the caches): the same call
#    with the caches warm, and right after 256 MB were streamed through them, as a qlen-1 forward of
#    the enwik8 spec streams its 160 MB of weights. The interpreter's, pybind11's and NumPy's code and
#    data then come back from DRAM; most of the enwik8 qlen-1 overhead is that.
#
# Variants alternate in rounds (a slow spell of a shared machine lands in one round of each); the
# figures are medians. Run on a quiet machine:
#   PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--rounds 5] [--txlc build/tools/txlc]
import argparse
import json
import statistics
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

import txlc

ROOT = Path(__file__).resolve().parents[1]


def full_session(model, qlen, rng):
    """A session whose memory holds mem_len positions (the steady state `txlc bench --prefill` times)."""
    s = model.session(qlen=qlen)
    s.forward(rng.integers(0, model.n_token, size=(qlen, 1)))
    mem_len = s.mem_len
    s.load_state({k: rng.standard_normal((mem_len,) + v.shape[1:], dtype=np.float32) * 0.1
                  for k, v in s.state().items()})
    return s


def time_forward(session, model, qlen, calls, rng):
    """Per call: (Python wall seconds, seconds inside the C++ forward)."""
    tokens = [rng.integers(0, model.n_token, size=(qlen, 1), dtype=np.int64) for _ in range(calls)]
    session.forward(tokens[0])  # this shape's plan exists from here on
    wall, inner = [], []
    for t in tokens:
        start = time.perf_counter_ns()
        session.forward(t)
        wall.append(time.perf_counter_ns() - start)
        inner.append(session._last_forward_ns)
    return wall, inner


def time_loop(session, model, qlen, calls, rng):
    """A plain loop of `calls` forwards, as a user's: (its wall ns, the ns spent in the C++ forward inside it).

    One clock reading at each end of the loop (as timeit), so the figure holds what the loop pays per call
    (the call, its arguments and results, the loop's own bytecode) and none of the clock's own cost: after a
    forward that streamed the weights, even an empty perf_counter_ns() pair costs microseconds."""
    tokens = [rng.integers(0, model.n_token, size=(qlen, 1), dtype=np.int64) for _ in range(calls)]
    session.forward(tokens[0])  # this shape's plan exists from here on
    inner = session._forward_ns_total
    start = time.perf_counter_ns()
    for t in tokens:
        session.forward(t)
    wall = time.perf_counter_ns() - start
    return wall, session._forward_ns_total - inner


def txlc_bench(exe, qlen, segments, threads):
    out = subprocess.run([exe, "bench", str(ROOT / "bench" / "enwik8_base.json"), "--random-weights", "--prefill",
                          "--qlen", str(qlen), "--segments", str(segments), "--threads", str(threads), "--repetitions", "1", "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)[0]["ms_per_segment"]  # one record per setting of the sweep: here one


def threads_run(model, streams, parallel):
    def run(ids):
        s = model.session()
        for i in range(0, len(ids), 64):
            s.forward(ids[i : i + 64])

    start = time.perf_counter()
    if parallel:
        ts = [threading.Thread(target=run, args=(ids,)) for ids in streams]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        for ids in streams:
            run(ids)
    return time.perf_counter() - start


def cache_effect(model, calls, flush):
    """Per call overhead (Python wall - C++ forward, ns) with warm caches and after streaming `flush`."""
    s = model.session(qlen=1)
    t = np.zeros((1, 1), dtype=np.int64)
    s.forward(t)
    warm, cold = [], []
    for _ in range(calls):
        for out, stream in ((warm, False), (cold, True)):
            if stream:
                flush.sum()
            start = time.perf_counter_ns()
            s.forward(t)
            out.append(time.perf_counter_ns() - start - s._last_forward_ns)
    return warm, cold


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="OpenMP threads of the overhead runs (default 2)")
    ap.add_argument("--txlc", default=str(ROOT / "build" / "tools" / "txlc"))
    a = ap.parse_args()
    rng = np.random.default_rng(0)

    enwik8 = txlc.load(ROOT / "bench" / "enwik8_base.json", random_weights=True, threads=a.threads)
    sessions = {80: full_session(enwik8, 80, rng), 1: full_session(enwik8, 1, rng)}
    calls = {80: 10, 1: 200}
    kjv = txlc.load(ROOT / "models" / "kjv-char", threads=1)
    streams = [rng.integers(0, kjv.n_token, size=(64 * 40, 1)) for _ in range(4)]

    results = {q: ([], []) for q in sessions}
    loops = {q: [] for q in sessions}  # per round: (loop wall - C++ forwards) / calls, ns
    cli = {q: [] for q in sessions}
    speed = {"sequential": [], "parallel": []}
    flush = np.ones(64 << 20, dtype=np.float32)  # 256 MB
    cache = ([], [])
    for r in range(a.rounds):
        for q, s in sessions.items():
            # the memory stays full: mem_len positions before and after every call
            wall, inner = time_forward(s, enwik8, q, calls[q], rng)
            results[q][0].extend(wall)
            results[q][1].extend(inner)
            wall, inner = time_loop(s, enwik8, q, calls[q], rng)
            loops[q].append((wall - inner) / calls[q])
            cli[q].append(txlc_bench(a.txlc, q, calls[q], a.threads))
        for kind in (["sequential", "parallel"] if r % 2 == 0 else ["parallel", "sequential"]):
            speed[kind].append(threads_run(kjv, streams, kind == "parallel"))
        warm, cold = cache_effect(kjv, 100, flush)
        cache[0].extend(warm)
        cache[1].extend(cold)
        print(f"round {r + 1} of {a.rounds} done", flush=True)

    print(f"\nenwik8 base (bench/enwik8_base.json, random weights), memory full (mlen 2100), "
          f"{a.threads} OpenMP threads, {a.rounds} rounds; medians")
    print("| qlen | calls | Python call | C++ forward inside it | overhead per call | overhead | txlc bench ms/segment |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for q in sessions:
        wall, inner = np.array(results[q][0]), np.array(results[q][1])
        over = wall - inner
        w, i, o = np.median(wall) / 1e3, np.median(inner) / 1e3, np.median(over) / 1e3
        print(f"| {q} | {len(wall)} | {w:.1f} µs | {i:.1f} µs | {o:.1f} µs | {100 * o / i:.3f} % "
              f"| {statistics.median(cli[q]):.3f} |")
    print("\nThe same calls in a plain loop timed at its ends (as timeit; the figure compared with the targets):")
    print("| qlen | calls per round | overhead per call, median over rounds | each round |")
    print("| --- | --- | --- | --- |")
    for q in sessions:
        per = [x / 1e3 for x in loops[q]]
        print(f"| {q} | {calls[q]} | {statistics.median(per):.1f} µs | {', '.join(f'{x:.1f}' for x in per)} |")
    print(f"\nkjv-char, qlen 1, threads=1: overhead per call {np.median(cache[0]) / 1e3:.1f} µs with the caches warm, "
          f"{np.median(cache[1]) / 1e3:.1f} µs right after 256 MB were streamed through them")
    seq, par = statistics.median(speed["sequential"]), statistics.median(speed["parallel"])
    print(f"\nfour Python threads (kjv-char, a session each, 40 segments of 64, threads=1 each): "
          f"one after the other {seq:.3f} s, in parallel {par:.3f} s: {seq / par:.2f}x")


if __name__ == "__main__":
    main()
