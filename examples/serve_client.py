#!/usr/bin/python3
"""examples/serve_client.py - a client of `txlc serve` with the standard library only (docs/SERVE.md).

    txlc serve models/kjv-char --port 8080 &
    python3 examples/serve_client.py http://127.0.0.1:8080

Creates a stream, scores two pieces of text on it (the memory carries from one to the next), continues it
with a seeded generation streamed as server-sent events, and deletes it.
"""
import http.client
import json
import sys
import urllib.parse


class Client:
    def __init__(self, url, api_key=None):
        u = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=300)
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer " + api_key

    def call(self, method, path, body=None):
        self.conn.request(method, path, body=json.dumps(body if body is not None else {}), headers=self.headers)
        r = self.conn.getresponse()
        reply = json.loads(r.read() or b"null")
        if r.status >= 400:
            e = reply["error"]
            raise RuntimeError("%s %s: %d %s: %s" % (method, path, r.status, e["type"], e["message"]))
        return reply

    def events(self, path, body):
        """The data of each server-sent event of a streamed generation."""
        self.conn.request("POST", path, body=json.dumps(body), headers=self.headers)
        r = self.conn.getresponse()
        if r.status >= 400:
            raise RuntimeError("POST %s: %d %s" % (path, r.status, r.read().decode()))
        for line in r:
            line = line.decode().rstrip("\n")
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                break
            yield json.loads(line[6:])
        r.read()


def main():
    c = Client(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080")
    print(c.call("GET", "/v1/models")["data"][0]["id"])
    s = c.call("POST", "/v1/streams")["id"]
    for text in ["Joh3:16 For God so loved the world,", " that he gave his only begotten Son"]:
        r = c.call("POST", "/v1/streams/%s/score" % s, {"text": text})
        print("scored %d tokens: perplexity %.3f, position %d" % (r["tokens"], r["perplexity"], r["position"]))
    for e in c.events("/v1/streams/%s/generate" % s, {"max_tokens": 60, "temperature": 0.7, "seed": 1, "stream": True}):
        if "error" in e:
            raise RuntimeError(e["error"]["message"])
        if e.get("done"):
            print("\n%d tokens, position %d" % (e["usage"]["completion_tokens"], e["position"]))
        else:
            print(e["text"], end="", flush=True)
    c.call("DELETE", "/v1/streams/" + s)


if __name__ == "__main__":
    main()
