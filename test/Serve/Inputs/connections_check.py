"""Connections that send nothing, or half a request, must not hold up the
requests of other clients of a `NAME serve` (its worker pool answers only
requests that have arrived whole).

    python3 connections_check.py ROOT_URL MODEL [--cap N]

Without --cap: 150 connections each send a request's first two lines and
stall, then 60 more send nothing; after each group a 2-token completion
and /health must answer within 5 s (the server's --read-timeout is 30 s:
a server that gives a stalled connection a thread waits that long once
the pool is full). All stay open until the end, then are closed.

With --cap N (the server's connection limit, from its file descriptors):
N + 8 silent connections; those past the limit are answered 503 with
Retry-After at once, and once all are closed a completion answers again.

Loopback only, at most 210 sockets, bounded by socket timeouts of 10 s.
One line per check; exits 1 on a failure.
"""

import argparse
import http.client
import json
import socket
import sys
import time
import urllib.parse


def completion_seconds(url, model):
    """Seconds a 2-token completion took, or None if it failed."""
    began = time.monotonic()
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        connection.request("POST", "/v1/completions",
                           json.dumps({"model": model, "prompt": [1, 2, 3],
                                       "max_tokens": 2, "temperature": 0}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
        ok = response.status == 200 and len(body["choices"][0]["token_ids"]) == 2
    except (OSError, http.client.HTTPException, ValueError, KeyError):
        ok = False
    finally:
        connection.close()
    return time.monotonic() - began if ok else None


def health_seconds(url):
    began = time.monotonic()
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        connection.request("GET", "/health")
        ok = connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        ok = False
    finally:
        connection.close()
    return time.monotonic() - began if ok else None


def open_sockets(url, count, first_bytes):
    sockets = []
    for _ in range(count):
        s = socket.create_connection((url.hostname, url.port), timeout=10)
        if first_bytes:
            s.sendall(first_bytes)
        sockets.append(s)
    return sockets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("model")
    parser.add_argument("--cap", type=int)
    args = parser.parse_args()
    url = urllib.parse.urlparse(args.root)
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line, flush=True)

    def fast(seconds):
        return seconds is not None and seconds < 5

    if args.cap is None:
        held = open_sockets(url, 150, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        took, health = completion_seconds(url, args.model), health_seconds(url)
        report(fast(took) and fast(health),
               f"150 half-sent requests: a completion and /health answer within 5 s: "
               f"{fast(took) and fast(health)}")
        held += open_sockets(url, 60, b"")
        took, health = completion_seconds(url, args.model), health_seconds(url)
        report(fast(took) and fast(health),
               f"and 60 silent connections: a completion and /health answer within 5 s: "
               f"{fast(took) and fast(health)}")
        for s in held:
            s.close()
    else:
        held = open_sockets(url, args.cap + 8, b"")
        refused = 0
        for s in held:
            s.settimeout(0.5)
            try:
                answer = s.recv(4096)
            except socket.timeout:
                continue
            if answer.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in answer:
                refused += 1
        report(refused == 8, f"{args.cap + 8} silent connections: {refused} past the "
                             f"limit answered 503 with Retry-After")
        for s in held:
            s.close()
        deadline = time.monotonic() + 10
        took = None
        while took is None and time.monotonic() < deadline:
            took = completion_seconds(url, args.model)
        report(took is not None, f"after they close, a completion answers: {took is not None}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
