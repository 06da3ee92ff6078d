#!/usr/bin/python3
"""bench/serve_load.py - concurrent generation streams against `txlc serve`, over loopback.

Starts a server (port 0, 127.0.0.1), fills each stream's memory (one score
request of mem_len + 1 random tokens), runs one short unmeasured round per
stream count (compiling the plans and pools the rounds use), then for every
stream count N runs N
streamed generations at once (server-sent events, python3-aiohttp), every one
continuing its stream greedily for --tokens tokens. The stream counts are
alternated over --rounds rounds (ascending, then descending) and each figure is
the median over the rounds. Printed (Markdown on stdout; progress on stderr):

  tokens/s      every stream's tokens over the wall time of the round
  x one         tokens/s over the one-stream figure
  bound         the bandwidth bound of that ratio: a one-token step reads the
                weights once for the batch and each stream's memory, so N
                streams in one step take (W + N*M) where one takes (W + M):
                N*(W + M) / (W + N*M), W = parameters x bytes per weight,
                M = state bytes per stream (both from GET /v1/models)
  of bound      x one / bound
  TTFT          time to first token, median over the round's streams
  inter-token   p50 and p99 of the gaps between a stream's tokens
  per step      streams per compute step (txlc_step_streams_total / txlc_steps_total)

  bench/serve_load.py build/tools/txlc bench/enwik8_base.json --random-weights --precision bf16 --mem-len 512
  bench/serve_load.py build/tools/txlc models/kjv-char --streams 1,2,4,8,16
  bench/serve_load.py ... --soak 600      # then N streams for 600 s, checking the server's RSS stays flat

Exit status 1 when a request fails, or when --soak sees the RSS grow by more
than 10 % after its first minute.
"""
import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time

try:
    import aiohttp
except ImportError:
    sys.exit("serve_load.py: needs python3-aiohttp (apt-get install python3-aiohttp)")

BYTES_PER_WEIGHT = {"f32": 4, "bf16": 2, "int8": 1}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


class Server:
    def __init__(self, args, max_streams):
        cmd = [args.txlc, "serve", args.model, "--port", "0", "--quiet", "--max-batch", str(args.max_batch or max_streams),
               "--max-resident", str(max(64, max_streams)), "--max-new-tokens", str(max(4096, args.tokens)),
               "--stream-idle-s", "0"]
        if args.random_weights:
            cmd.append("--random-weights")
        for flag, value in (("--precision", args.precision), ("--mem-len", args.mem_len), ("--qlen", args.qlen),
                            ("--threads", args.threads)):
            if value is not None:
                cmd += [flag, str(value)]
        cmd += args.server_arg
        log("serve_load: " + " ".join(cmd))
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            sys.exit("serve_load: the server did not start (stdout %r)" % line)
        self.url = line.split()[-1]

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def call(session, url, method, path, body=None):
    async with session.request(method, url + path, json=body) as r:
        text = await r.text()
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, text.strip()))
        return json.loads(text) if r.content_type == "application/json" else text


def metric(text, name):
    for line in text.split("\n"):
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


async def generate(session, url, sid, tokens):
    """One streamed generation: (start, token arrival times)."""
    start, times = time.perf_counter(), []
    body = {"max_tokens": tokens, "greedy": True, "stream": True}
    async with session.post(url + "/v1/streams/%s/generate" % sid, json=body) as r:
        if r.status != 200:
            raise RuntimeError("generate on %s: %d %s" % (sid, r.status, await r.text()))
        async for raw in r.content:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                break
            event = json.loads(data)
            if "error" in event:
                raise RuntimeError("generate on %s: %s" % (sid, event["error"]))
            if "token" in event:
                times.append(time.perf_counter())
    if len(times) != tokens:
        raise RuntimeError("generate on %s: %d tokens of %d" % (sid, len(times), tokens))
    return start, times


async def round_of(session, url, n, tokens):
    m0 = await call(session, url, "GET", "/metrics")
    begin = time.perf_counter()
    results = await asyncio.gather(*(generate(session, url, "load-%d" % i, tokens) for i in range(n)))
    wall = time.perf_counter() - begin
    m1 = await call(session, url, "GET", "/metrics")
    steps = metric(m1, "txlc_steps_total") - metric(m0, "txlc_steps_total")
    rows = metric(m1, "txlc_step_streams_total") - metric(m0, "txlc_step_streams_total")
    gaps = [b - a for _, t in results for a, b in zip(t, t[1:])]
    return {"tokens_per_s": n * tokens / wall, "ttft": statistics.median(t[0] - s for s, t in results),
            "gap50": percentile(gaps, 50), "gap99": percentile(gaps, 99), "per_step": rows / steps if steps else 0}


async def main(args):
    counts = [int(x) for x in args.streams.split(",")]
    with open("/proc/loadavg") as f:
        load_at_start = " ".join(f.read().split()[:3])
    server = Server(args, max(counts))
    out = 0
    try:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
        async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
            model = (await call(session, server.url, "GET", "/v1/models"))["data"][0]
            precision = args.precision or model.get("precision", "f32")
            weights = model["parameters"] * BYTES_PER_WEIGHT.get(precision, 4)
            state = model["state_bytes_per_stream"]
            rng = random.Random(args.seed)
            log("serve_load: %s, %d parameters (%s), mem_len %d, %d state bytes per stream; filling %d streams" %
                (model["id"], model["parameters"], precision, model["mem_len"], state, max(counts)))
            for i in range(max(counts)):
                sid = "load-%d" % i
                await call(session, server.url, "POST", "/v1/streams", {"id": sid})
                ids = [rng.randrange(model["n_token"]) for _ in range(model["mem_len"] + 1)]
                await call(session, server.url, "POST", "/v1/streams/%s/score" % sid, {"tokens": ids})
            for n in counts:  # compiles every plan and pool the rounds use; not measured
                await round_of(session, server.url, n, 4)
            figures = {n: [] for n in counts}
            for r in range(args.rounds):
                for n in (counts if r % 2 == 0 else counts[::-1]):
                    f = await round_of(session, server.url, n, args.tokens)
                    figures[n].append(f)
                    log("serve_load: round %d, %2d streams: %.1f tokens/s, %.2f streams per step" %
                        (r + 1, n, f["tokens_per_s"], f["per_step"]))
            med = {n: {k: statistics.median(f[k] for f in figures[n]) for k in figures[n][0]} for n in counts}
            one = med[counts[0]]["tokens_per_s"] if counts[0] == 1 else None
            rows = []
            for n in counts:
                f = med[n]
                bound = n * (weights + state) / (weights + n * state)
                ratio = f["tokens_per_s"] / one if one else float("nan")
                rows.append({"streams": n, **f, "x_one": ratio, "bound": bound, "of_bound": ratio / bound})
            rss = server.rss_kib() * 1024
            if args.format == "json":
                print(json.dumps({"model": model["id"], "precision": precision, "mem_len": model["mem_len"],
                                  "tokens": args.tokens, "rounds": args.rounds, "server_rss_bytes": rss,
                                  "rows": rows}, indent=1))
            else:
                print("| streams | tokens/s | x one | bound | of bound | TTFT ms | inter-token p50 ms | p99 ms "
                      "| streams per step |")
                print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
                for r in rows:
                    print("| %d | %.1f | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.2f |" % (
                        r["streams"], r["tokens_per_s"], r["x_one"], r["bound"], r["of_bound"], r["ttft"] * 1e3,
                        r["gap50"] * 1e3, r["gap99"] * 1e3, r["per_step"]))
                print()
                print("Server RSS after the rounds: %.1f MiB; load average at the start: %s." % (
                    rss / 2**20, load_at_start))
            if args.soak > 0:
                n = max(counts)
                log("serve_load: soak, %d streams for %d s" % (n, args.soak))
                begin, samples = time.time(), []
                while time.time() - begin < args.soak:
                    await round_of(session, server.url, n, args.tokens)
                    samples.append((time.time() - begin, server.rss_kib()))
                settled = [kib for t, kib in samples if t >= 60] or [samples[-1][1]]
                growth = (max(settled) - settled[0]) / settled[0]
                print("soak: %d s, %d rounds of %d streams; RSS %.1f MiB after 1 min, %.1f MiB at the end, "
                      "max %.1f MiB (%+.1f %%)" % (args.soak, len(samples), n, settled[0] / 1024,
                                                   samples[-1][1] / 1024, max(settled) / 1024, growth * 100))
                if growth > 0.10:
                    log("serve_load: RSS grew by more than 10 % during the soak")
                    out = 1
    except RuntimeError as e:
        log("serve_load: " + str(e))
        out = 1
    finally:
        server.stop()
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("txlc")
    p.add_argument("model")
    p.add_argument("--streams", default="1,2,4,8,16", help="stream counts, comma-separated (default 1,2,4,8,16)")
    p.add_argument("--tokens", type=int, default=64, help="tokens per stream per round (default 64)")
    p.add_argument("--rounds", type=int, default=3, help="rounds over the stream counts (default 3)")
    p.add_argument("--random-weights", action="store_true")
    p.add_argument("--precision")
    p.add_argument("--mem-len", type=int)
    p.add_argument("--qlen", type=int)
    p.add_argument("--threads", type=int)
    p.add_argument("--max-batch", type=int, help="the server's --max-batch (default: the most streams)")
    p.add_argument("--seed", type=int, default=0, help="of the prefill tokens")
    p.add_argument("--soak", type=int, default=0, help="seconds of load after the table, checking RSS (default 0)")
    p.add_argument("--format", choices=["md", "json"], default="md")
    p.add_argument("--server-arg", action="append", default=[], help="one more argument for txlc serve")
    sys.exit(asyncio.run(main(p.parse_args())))
