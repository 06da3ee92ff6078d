#!/usr/bin/python3
# tests/serve/serve_test.py - `txlc serve` end to end on 127.0.0.1: routes and codes, served == offline,
# spill and restore, restarts, hostile input. One case per run:
#   serve_test.py TXLC MODELS CASE     (CASE: routes score words generate batch spill restart kill9 limits)
# Every server is started on port 0 (its address read from stdout) and killed at the end.
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TXLC, MODELS, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
CHAR = os.path.join(MODELS, "kjv-char")
WORK = tempfile.mkdtemp(prefix="txlc-serve-test-")
servers = []


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    for s in servers:
        if s.proc.poll() is None:
            s.proc.kill()
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Server:
    def __init__(self, *args, model=CHAR, name="server", wrap=()):
        self.log = os.path.join(WORK, name + ".log")
        self.proc = subprocess.Popen([*wrap, TXLC, "serve", model, "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=open(self.log, "a"), text=True)
        servers.append(self)
        line = self.proc.stdout.readline()
        check(line.startswith("listening on http://127.0.0.1:"), "no address on stdout: %r (log %s: %s)" %
              (line, self.log, self.logtext()))
        self.port = int(line.rsplit(":", 1)[1])
        self.key = None

    def logtext(self):
        return open(self.log).read()

    def call(self, method, path, body=None, raw=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = dict(headers or {})
        if self.key:
            h["Authorization"] = "Bearer " + self.key
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        if data is not None:
            h["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        try:
            j = json.loads(text) if text else None
        except ValueError:
            j = text
        return r.status, j

    def expect(self, code, method, path, body=None, **kw):
        status, j = self.call(method, path, body, **kw)
        check(status == code, "%s %s: expected %d, got %d %s" % (method, path, code, status, j))
        if code >= 400:
            check(isinstance(j, dict) and j["error"]["code"] == code and j["error"]["type"] and
                  j["error"]["message"], "%s %s: not a JSON error: %r" % (method, path, j))
        return j

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=60)
        return rc


def offline_score(ids, model=CHAR):
    path = os.path.join(WORK, "ids-%d-%d.txt" % (len(ids), threading.get_ident()))
    with open(path, "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    out = subprocess.run([TXLC, "score", model, path, "--ids", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def served_sum(replies):
    total = 0.0  # token order, as driver/scorer.cpp sums
    for r in replies:
        for v in r["per_token"]:
            total += v
    return total


def valid_ids(server, model=CHAR):
    text = open(os.path.join(model, "valid.txt")).read()
    return server.expect(200, "POST", "/v1/tokenize", {"text": text})["tokens"]


def case_routes():
    s = Server()
    check(s.expect(200, "GET", "/health")["status"] == "ok", "health")
    m = s.expect(200, "GET", "/v1/models")["data"][0]
    check(m["mem_len"] == 64 and m["qlen"] == 64 and m["n_token"] == 73, "models: %r" % m)
    r = s.expect(201, "POST", "/v1/streams", {"id": "a"})
    check(r == {**r, "id": "a", "position": 0, "mem_len": 64}, "create: %r" % r)
    s.expect(409, "POST", "/v1/streams", {"id": "a"})
    minted = s.expect(201, "POST", "/v1/streams")["id"]
    s.expect(200, "GET", "/v1/streams/" + minted)
    s.expect(400, "POST", "/v1/streams", {"id": "../etc"})
    s.expect(404, "GET", "/v1/streams/nope")
    s.expect(404, "POST", "/v1/streams/nope/score", {"text": "abc"})
    r = s.expect(200, "POST", "/v1/streams/a/score", {"text": "In the beginning", "per_token": True})
    check(r["position"] == 16 and r["tokens"] == 15 and len(r["per_token"]) == 15, "score: %r" % r)
    s.expect(409, "POST", "/v1/streams/a/score", {"text": "x", "expect_position": 3})
    r = s.expect(200, "POST", "/v1/streams/a/score", {"tokens": [5, 6], "expect_position": 16})
    check(r["position"] == 18 and r["tokens"] == 2, "score with expect_position: %r" % r)
    g = s.expect(200, "GET", "/v1/streams/a")
    check(g["position"] == 18 and g["residency"] == "resident" and g["mem_filled"] == 17, "describe: %r" % g)
    s.expect(400, "POST", "/v1/streams/a/score", raw="{not json")
    s.expect(400, "POST", "/v1/streams/a/score", raw="[1,2]")
    s.expect(400, "POST", "/v1/streams/a/score", {"tokens": [1, 999]})
    s.expect(400, "POST", "/v1/streams/a/score", {"tokens": "abc"})
    s.expect(400, "POST", "/v1/streams/a/generate", {"max_tokens": 0})
    s.expect(400, "POST", "/v1/streams/a/generate", {"max_tokens": 4, "top_p": 2})
    s.expect(400, "POST", "/v1/streams/a/save")  # no --state-dir
    s.expect(404, "GET", "/nowhere")
    s.expect(200, "DELETE", "/v1/streams/a")
    s.expect(404, "GET", "/v1/streams/a")
    status, text = s.call("GET", "/metrics")
    check(status == 200 and 'txlc_requests_total{route="/v1/streams/{id}/score",code="200"} 2' in text and
          "txlc_tokens_scored_total 17" in text and "txlc_request_seconds_bucket" in text, "metrics:\n" + text)
    check(s.stop() == 0, "exit code after SIGTERM")
    check(" POST /v1/streams/a/score 200 " in s.logtext(), "a log line per request")


def case_score():
    s = Server("--quiet")
    ids = valid_ids(s)
    q = 64
    # 10 requests whose boundaries are segment boundaries: k*q + 1 tokens, then multiples of q, then the rest.
    sizes = [11 * q + 1] + [q * (7 + 3 * i) for i in range(8)]
    sizes.append(len(ids) - sum(sizes))
    check(sizes[-1] > 0, "valid.txt too short")
    s.expect(201, "POST", "/v1/streams", {"id": "v"})
    replies, at = [], 0
    for n in sizes:
        replies.append(s.expect(200, "POST", "/v1/streams/v/score",
                                {"tokens": ids[at:at + n], "per_token": True, "expect_position": at}))
        at += n
    text = os.path.join(CHAR, "valid.txt")
    out = subprocess.run([TXLC, "score", CHAR, text, "--json"], capture_output=True, text=True, check=True)
    offline = json.loads(out.stdout)
    got = served_sum(replies)
    check(got == offline["nll_sum"], "served nll_sum %r != txlc score %r" % (got, offline["nll_sum"]))
    check(sum(r["tokens"] for r in replies) == offline["tokens"], "token counts")
    print("served == offline: nll_sum %r over %d tokens in %d requests" % (got, offline["tokens"], len(sizes)))
    s.stop()


def case_words():
    words = os.path.join(MODELS, "kjv-words")
    s = Server("--quiet", model=words)
    q = 48
    ids = valid_ids(s, words)[: q * 60 + 1]
    sizes = [q * 5 + 1] + [q * (3 + i) for i in range(8)]
    sizes.append(len(ids) - sum(sizes))
    s.expect(201, "POST", "/v1/streams", {"id": "w"})
    replies, at = [], 0
    for n in sizes:
        replies.append(s.expect(200, "POST", "/v1/streams/w/score", {"tokens": ids[at:at + n], "per_token": True}))
        at += n
    got, offline = served_sum(replies), offline_score(ids, words)["nll_sum"]
    check(got == offline, "words: served %r != txlc score %r" % (got, offline))
    g = s.expect(200, "POST", "/v1/streams/w/generate", {"max_tokens": 5, "seed": 3})
    check(len(g["token_ids"]) == 5 and g["text"], "words generate %r" % g)
    s.stop()


def case_generate():
    s = Server("--quiet")
    prompt = "In the beginning"
    args = {"max_tokens": 40, "temperature": 0.8, "top_k": 10, "seed": 7}
    s.expect(201, "POST", "/v1/streams", {"id": "g"})
    r = s.expect(200, "POST", "/v1/streams/g/generate", {"prompt": prompt, **args})
    out = subprocess.run([TXLC, "generate", CHAR, "--prompt", prompt, "-n", "40", "--temperature", "0.8",
                          "--top-k", "10", "--seed", "7", "--json"], capture_output=True, text=True, check=True)
    offline = json.loads(out.stdout)
    check(r["token_ids"] == offline["token_ids"] and r["text"] == offline["text"],
          "served %r != txlc generate %r" % (r, offline))
    check(r["position"] == 16 + 40 and r["usage"] == {"prompt_tokens": 16, "completion_tokens": 40}, "usage %r" % r)
    # The same as server-sent events.
    s.expect(201, "POST", "/v1/streams", {"id": "e"})
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", "/v1/streams/e/generate", body=json.dumps({"prompt": prompt, "stream": True, **args}))
    resp = c.getresponse()
    check(resp.status == 200 and resp.getheader("Content-Type").startswith("text/event-stream"), "SSE headers")
    events = [l[6:] for l in resp.read().decode().split("\n") if l.startswith("data: ")]
    check(events[-1] == "[DONE]", "last event %r" % events[-1])
    tokens = [json.loads(e) for e in events[:-2]]
    last = json.loads(events[-2])
    check([t["token"] for t in tokens] == offline["token_ids"], "SSE tokens")
    check([t["position"] for t in tokens] == list(range(17, 57)), "SSE positions")
    check(last["done"] and last["usage"]["completion_tokens"] == 40 and "timings" in last, "SSE last %r" % last)
    c.close()
    # Continuing: a greedy continuation runs from the pending token.
    r2 = s.expect(200, "POST", "/v1/streams/g/generate", {"max_tokens": 5, "greedy": True})
    check(r2["position"] == 61, "continuation %r" % r2)
    s.expect(404, "POST", "/v1/streams/none/generate", {"prompt": "x", "stream": True})
    s.stop()


def case_spill():
    state = os.path.join(WORK, "state")
    s = Server("--state-dir", state, "--max-resident", "1", "--quiet")
    ids = valid_ids(s)[: 64 * 6 + 1]
    s.expect(201, "POST", "/v1/streams", {"id": "a"})
    r1 = s.expect(200, "POST", "/v1/streams/a/score", {"tokens": ids[:129], "per_token": True})
    s.expect(201, "POST", "/v1/streams", {"id": "b"})  # a is spilled for b (and b for a below)
    check(s.expect(200, "GET", "/v1/streams/a")["residency"] == "spilled", "a spilled")
    check(os.path.exists(os.path.join(state, "a.state")), "a.state written")
    r2 = s.expect(200, "POST", "/v1/streams/a/score", {"tokens": ids[129:], "per_token": True})
    check(r2["restored"] is True and "restore_seconds" in r2, "restored: %r" % r2)
    check(served_sum([r1, r2]) == offline_score(ids)["nll_sum"], "spilled stream == offline")
    s.expect(201, "POST", "/v1/streams", {"id": "c"})  # a, read back from its file, is spilled again
    g = s.expect(200, "GET", "/v1/streams/a")
    check(g["residency"] == "spilled" and g["position"] == len(ids), "a spilled again: %r" % g)
    status, text = s.call("GET", "/metrics")
    check('txlc_stream_evictions_total{reason="capacity"} 3' in text, "capacity eviction counted:\n" + text)
    s.stop()
    # Without a state directory: dropped streams answer 410 with the reason and the position; idle eviction.
    s = Server("--max-resident", "1", "--stream-idle-s", "1", "--quiet", name="drop")
    s.expect(201, "POST", "/v1/streams", {"id": "a"})
    s.expect(200, "POST", "/v1/streams/a/score", {"tokens": ids[:10]})
    s.expect(201, "POST", "/v1/streams", {"id": "b"})
    e = s.expect(410, "GET", "/v1/streams/a")["error"]
    check(e["reason"] == "capacity" and e["position"] == 10, "410: %r" % e)
    time.sleep(2.5)
    e = s.expect(410, "POST", "/v1/streams/b/score", {"tokens": [1, 2]})["error"]
    check(e["reason"] == "idle" and e["position"] == 0, "idle 410: %r" % e)
    s.expect(404, "GET", "/v1/streams/c")
    s.expect(201, "POST", "/v1/streams", {"id": "a"})  # an id can be used again
    s.stop()


def case_restart():
    state = os.path.join(WORK, "state")
    s = Server("--state-dir", state, "--quiet")
    ids = valid_ids(s)[: 64 * 4 + 1]
    replies = {}
    for sid in ("x", "y"):
        s.expect(201, "POST", "/v1/streams", {"id": sid})
        replies[sid] = [s.expect(200, "POST", "/v1/streams/%s/score" % sid, {"tokens": ids[:129], "per_token": True})]
    # A second server shares the directory: the streams the first owns answer 409 there.
    t = Server("--state-dir", state, "--quiet", name="second")
    e = t.expect(409, "GET", "/v1/streams/x")["error"]
    check(e["type"] == "stream_owned_elsewhere", "owned elsewhere: %r" % e)
    t.expect(409, "POST", "/v1/streams", {"id": "y"})
    t.expect(201, "POST", "/v1/streams", {"id": "z"})
    t.expect(200, "POST", "/v1/streams/z/score", {"tokens": ids[:129]})
    s.expect(409, "GET", "/v1/streams/z")
    check(s.stop() == 0, "SIGTERM exits 0")
    check("spilled 2 stream(s)" in s.logtext(), "spilled at exit")
    # The first server stopped: the second takes its streams over on their next request.
    r = t.expect(200, "POST", "/v1/streams/x/score", {"tokens": ids[129:], "per_token": True, "expect_position": 129})
    check(r["restored"], "taken over from the state file")
    check(served_sum(replies["x"] + [r]) == offline_score(ids)["nll_sum"], "taken-over stream == offline")
    check("took over stream x" in t.logtext(), "take-over logged")
    check(t.stop() == 0, "second server: SIGTERM exits 0")
    # A restart lists every state file as a spilled stream.
    s = Server("--state-dir", state, "--quiet", name="restarted")
    g = s.expect(200, "GET", "/v1/streams/x")
    check(g["position"] == len(ids), "x after restart: %r" % g)
    check(s.expect(200, "GET", "/v1/streams/z")["position"] == 129, "z after restart")
    g = s.expect(200, "GET", "/v1/streams/y")
    check(g["position"] == 129 and g["residency"] == "spilled", "after restart: %r" % g)
    r = s.expect(200, "POST", "/v1/streams/y/score", {"tokens": ids[129:], "per_token": True, "expect_position": 129})
    check(r["restored"], "restored")
    check(served_sum(replies["y"] + [r]) == offline_score(ids)["nll_sum"], "restarted stream == offline")
    s.expect(200, "DELETE", "/v1/streams/x")
    check(not os.path.exists(os.path.join(state, "x.state")) and not os.path.exists(os.path.join(state, "x.lock")),
          "DELETE removes the state and lock files")
    s.stop()


def case_kill9():
    state = os.path.join(WORK, "state")
    s = Server("--state-dir", state, "--quiet")
    for sid in ("k", "torn", "flip"):
        s.expect(201, "POST", "/v1/streams", {"id": sid})
        s.expect(200, "POST", "/v1/streams/%s/score" % sid, {"text": "In the beginning God created"})
        s.expect(200, "POST", "/v1/streams/%s/save" % sid)
    s.expect(200, "POST", "/v1/streams/k/score", {"text": " the heaven"})  # after its save: lost by kill -9
    s.stop(signal.SIGKILL)
    torn = os.path.join(state, "torn.state")
    size = os.path.getsize(torn)
    with open(torn, "r+b") as f:
        f.truncate(size // 2)
    flip = os.path.join(state, "flip.state")
    data = bytearray(open(flip, "rb").read())
    data[-7] ^= 0x40  # a byte of the memory: the header still parses, the checksum does not match
    open(flip, "wb").write(bytes(data))
    s = Server("--state-dir", state, "--quiet", name="after-kill")
    g = s.expect(200, "GET", "/v1/streams/k")
    check(g["position"] == 28, "k at its last save: %r" % g)
    s.expect(200, "POST", "/v1/streams/k/score", {"text": "x", "expect_position": 28})
    e = s.expect(410, "GET", "/v1/streams/torn")["error"]
    check(e["reason"] == "corrupt_state", "torn: %r" % e)
    e = s.expect(410, "POST", "/v1/streams/flip/score", {"text": "x"})["error"]
    check(e["reason"] == "corrupt_state" and "checksum" in e["message"], "flipped: %r" % e)
    check(os.path.getsize(torn) == size // 2 and open(flip, "rb").read() == bytes(data), "files left intact")
    log = s.logtext()
    check(torn in log and flip in log, "refused files named in the log:\n" + log)
    s.expect(200, "GET", "/health")
    s.stop()
    # --durable: each request's state is on disk before its reply; kill -9 during a request loses only that one.
    durable = os.path.join(WORK, "durable")
    s = Server("--state-dir", durable, "--durable", "--quiet", name="durable")
    ids = valid_ids(s)
    s.expect(201, "POST", "/v1/streams", {"id": "d"})
    s.expect(200, "POST", "/v1/streams/d/score", {"tokens": ids[:129]})
    s.expect(201, "POST", "/v1/streams", {"id": "fresh"})
    t = threading.Thread(target=lambda: s.call("POST", "/v1/streams/d/score", {"tokens": ids[129:]}))
    t.start()
    time.sleep(0.3)  # the long request is in flight
    s.stop(signal.SIGKILL)
    t.join()
    s = Server("--state-dir", durable, "--quiet", name="durable-after")
    g = s.expect(200, "GET", "/v1/streams/d")
    check(g["position"] == 129, "durable stream after kill -9 mid-request: %r" % g)
    check(s.expect(200, "GET", "/v1/streams/fresh")["position"] == 0, "a created stream is kept")
    r = s.expect(200, "POST", "/v1/streams/d/score", {"tokens": ids[129:129 + 128], "per_token": True})
    s.stop()


def case_sse():
    import asyncio
    import aiohttp  # Debian's python3-aiohttp
    s = Server("--quiet")
    url = "http://127.0.0.1:%d" % s.port

    async def events(session, sid, body, keep=None):
        """The events of a streamed generation; after `keep` token events the client goes away."""
        got = []
        async with session.post(url + "/v1/streams/%s/generate" % sid, json={**body, "stream": True}) as r:
            check(r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream"), "SSE status")
            async for raw in r.content:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    got.append(line[6:])
                    if keep is not None and len(got) >= keep:
                        return got
        return got

    async def main():
        async with aiohttp.ClientSession() as session:
            for i in range(4):
                await session.post(url + "/v1/streams", json={"id": "a%d" % i})
            body = {"prompt": "In the beginning", "max_tokens": 20, "greedy": True}
            runs = await asyncio.gather(*(events(session, "a%d" % i, body) for i in range(4)))
            for got in runs:
                check(got[-1] == "[DONE]" and json.loads(got[-2])["done"], "SSE end %r" % got[-2:])
                check([json.loads(e)["position"] for e in got[:-2]] == list(range(17, 37)), "SSE positions")
            tokens = {tuple(json.loads(e)["token"] for e in g[:-2]) for g in runs}
            check(len(tokens) == 1, "the same greedy tokens on every stream: %r" % tokens)
            # A client that goes away after 3 tokens: the generation stops, the tokens sent stay in the stream.
            await session.post(url + "/v1/streams", json={"id": "gone"})
            await events(session, "gone", {"prompt": "In the beginning", "max_tokens": 4000}, keep=3)
            for _ in range(100):
                async with session.get(url + "/v1/streams/gone") as r:
                    position = (await r.json())["position"]
                await asyncio.sleep(0.05)
                async with session.get(url + "/v1/streams/gone") as r:
                    if (await r.json())["position"] == position:
                        break
            check(16 + 3 <= position < 16 + 4000, "the generation went on after the client left: %d" % position)
            async with session.post(url + "/v1/streams/gone/generate", json={"max_tokens": 2}) as r:
                check(r.status == 200 and (await r.json())["position"] == position + 2, "the stream goes on")
    asyncio.run(main())
    s.stop()


def case_diskfull():
    probe = ["unshare", "-m", "--propagation", "private", "true"]
    if os.geteuid() != 0 or not shutil.which("unshare") or subprocess.run(probe, capture_output=True).returncode:
        print("skipped: a private tmpfs needs root and a mount namespace (unshare -m)")
        return
    # The state directory is a 700 KiB tmpfs in the server's own mount namespace: two state files fit.
    state = os.path.join(WORK, "small")
    os.makedirs(state)
    mount = ["unshare", "-m", "--propagation", "private", "sh", "-c",
             'mount -t tmpfs -o size=700k tmpfs "$0" && exec "$@"', state]
    s = Server("--state-dir", state, "--max-resident", "1", "--quiet", name="diskfull", wrap=mount)
    seen = os.path.join("/proc/%d/root" % s.proc.pid, state.lstrip("/"))
    refused = None
    for i in range(6):
        status, body = s.call("POST", "/v1/streams", {"id": "f%d" % i})
        if status == 507:
            refused = (i, body["error"])
            break
        check(status == 201, "create f%d: %d %r" % (i, status, body))
        s.expect(200, "POST", "/v1/streams/f%d/score" % i, {"text": "In the beginning God created " * 4})
    check(refused is not None, "no stream was refused on a full state directory")
    i, e = refused
    check(e["type"] == "state_not_saved" and "f%d" % (i - 1) in e["message"], "507: %r" % e)
    s.expect(200, "GET", "/health")
    last = "f%d" % (i - 1)  # its spill failed: it stays resident and goes on
    check(s.expect(200, "GET", "/v1/streams/" + last)["residency"] == "resident", "not resident after a failed spill")
    s.expect(200, "POST", "/v1/streams/%s/score" % last, {"text": " God"})
    check(not [f for f in os.listdir(seen) if ".tmp" in f], "temporary files left: %r" % os.listdir(seen))
    s.expect(200, "DELETE", "/v1/streams/f0")  # room again
    s.expect(201, "POST", "/v1/streams", {"id": "f%d" % i})
    s.stop()


def case_limits():
    s = Server("--max-streams", "50", "--max-body-bytes", "2000", "--timeout-s", "1", "--quiet",
               "--api-key", "sekret")
    s.expect(200, "GET", "/health")  # open without the key
    s.expect(401, "GET", "/v1/models")
    s.key = "wrong"
    s.expect(401, "POST", "/v1/streams")
    s.key = "sekret"
    s.expect(200, "GET", "/v1/models")
    # 10,000 creations on one connection: 50 streams, then 503 each time, the server still up.
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    codes = {}
    for i in range(10000):
        c.request("POST", "/v1/streams", body=json.dumps({"id": "n%d" % i}),
                  headers={"Authorization": "Bearer sekret"})
        r = c.getresponse()
        body = json.loads(r.read())
        codes[r.status] = codes.get(r.status, 0) + 1
        if r.status == 503:
            check(body["error"]["type"] == "too_many_streams", "503 body %r" % body)
    c.close()
    check(codes == {201: 50, 503: 9950}, "creations: %r" % codes)
    # A huge body: 413, as JSON.
    s.expect(413, "POST", "/v1/streams/n0/score", {"text": "a" * 100000})
    # A slow client (slowloris): its connection is closed after --timeout-s; others are served meanwhile.
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.sendall(b"POST /v1/streams HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    s.expect(200, "GET", "/health")
    sock.settimeout(10)
    start = time.time()
    try:
        data = sock.recv(4096)
    except OSError:
        data = b""
    check(time.time() - start < 8, "slow client not cut off")
    sock.close()
    s.expect(200, "GET", "/health")
    s.stop()
    # --max-queue 1: a long score runs, one request waits, the next is refused with 429.
    s = Server("--max-queue", "1", "--quiet", name="queue")
    ids = valid_ids(s)
    s.expect(201, "POST", "/v1/streams", {"id": "q"})
    results = {}
    long = threading.Thread(target=lambda: results.update(a=s.call("POST", "/v1/streams/q/score", {"tokens": ids})))
    long.start()
    time.sleep(0.5)
    waiting = threading.Thread(target=lambda: results.update(b=s.call("GET", "/v1/streams/q")))
    waiting.start()
    time.sleep(0.5)
    status, body = s.call("GET", "/v1/streams/q")
    long.join()
    waiting.join()
    check(status == 429 and body["error"]["type"] == "queue_full", "429: %d %r" % (status, body))
    check(results["a"][0] == 200 and results["b"][0] == 200, "queued requests served: %r" % {
        k: v[0] for k, v in results.items()})
    s.stop()


def metric(text, name):
    for line in text.split("\n"):
        if line.startswith(name + " "):
            return float(line.split()[1])
    fail("no metric %s in:\n%s" % (name, text))


def concurrently(fns):
    results, barrier = [None] * len(fns), threading.Barrier(len(fns))

    def run(i):
        barrier.wait()
        results[i] = fns[i]()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def case_batch():
    s = Server("--quiet", "--max-batch", "4")
    # Four greedy generations at once: batched one-token steps, each == txlc generate.
    prompts = ["In the beginning", "And God said", "The LORD is my shepherd", "Blessed are the"]
    n = 30
    for i in range(4):
        s.expect(201, "POST", "/v1/streams", {"id": "g%d" % i})
    replies = concurrently([lambda i=i: s.expect(200, "POST", "/v1/streams/g%d/generate" % i,
                                                 {"prompt": prompts[i], "max_tokens": n, "greedy": True})
                            for i in range(4)])
    for i, r in enumerate(replies):
        out = subprocess.run([TXLC, "generate", CHAR, "--prompt", prompts[i], "-n", str(n), "--greedy", "--json"],
                             capture_output=True, text=True, check=True)
        check(r["token_ids"] == json.loads(out.stdout)["token_ids"], "batched generation %d != txlc generate" % i)
    status, text = s.call("GET", "/metrics")
    steps, rows = metric(text, "txlc_steps_total"), metric(text, "txlc_step_streams_total")
    check(rows / steps > 1.5, "generations not batched: %d stream segments in %d steps" % (rows, steps))
    # Four streams scoring at once, four requests each (129 tokens, then 128: segment boundaries): within the
    # batch tolerance of offline scoring.
    ids = valid_ids(s)
    sizes = [129, 128, 128, 128]
    length = sum(sizes)
    for i in range(4):
        s.expect(201, "POST", "/v1/streams", {"id": "s%d" % i})

    def score(i):
        mine, at, got = ids[1000 * i:1000 * i + length], 0, []
        for size in sizes:
            got.append(s.expect(200, "POST", "/v1/streams/s%d/score" % i,
                                {"tokens": mine[at:at + size], "per_token": True}))
            at += size
        return served_sum(got), offline_score(mine)["nll_sum"]
    before = metric(s.call("GET", "/metrics")[1], "txlc_step_streams_total") - metric(
        s.call("GET", "/metrics")[1], "txlc_steps_total")
    for got, offline in concurrently([lambda i=i: score(i) for i in range(4)]):
        check(abs(got - offline) <= 1e-5 * abs(offline), "batched score %r, offline %r" % (got, offline))
    text = s.call("GET", "/metrics")[1]
    check(metric(text, "txlc_step_streams_total") - metric(text, "txlc_steps_total") > before,
          "scores not batched:\n" + text)
    # A request alone runs at batch 1, bit for bit as offline.
    s.expect(201, "POST", "/v1/streams", {"id": "solo"})
    r = s.expect(200, "POST", "/v1/streams/solo/score", {"tokens": ids[:129], "per_token": True})
    check(served_sum([r]) == offline_score(ids[:129])["nll_sum"], "a lone request is not bit for bit")
    check(metric(s.call("GET", "/metrics")[1], "txlc_batch_size") == 1, "a lone request's batch")
    s.stop()


CASES = {"routes": case_routes, "batch": case_batch, "sse": case_sse, "diskfull": case_diskfull, "score": case_score, "generate": case_generate, "spill": case_spill,
         "restart": case_restart, "words": case_words, "kill9": case_kill9, "limits": case_limits}
try:
    CASES[CASE]()
finally:
    for srv in servers:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
print("ok:", CASE)
