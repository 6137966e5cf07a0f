"""The queue, cancellation and SIGTERM of a `NAME serve` of one row
(--max-batch 1) and a queue of one (--max-queue 1).

    python3 queue_check.py ROOT_URL MODEL SERVER_PID

  0. A client that stalls halfway through its request is dropped after
     --read-timeout.
  1. A streams 1000 tokens; B waits behind it (/metrics: queue depth 1);
     C is refused: 429, Retry-After, OpenAI's error object.
  2. A's client closes its socket: its row must be freed at once, so B
     finishes in less than half the time A still needed (from A's rate).
     The same for a request that is not streamed (A2 and B2).
  3. D streams 300 tokens and E waits; then SIGTERM: the listening socket
     closes (a new request fails), but D and E finish whole (finish_reason
     "length", every token), and the server then exits (checked by
     with_server.py --commands-stop-it).
One line per check; exits 1 on a failure.
"""

import argparse
import http.client
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import urllib.parse


def connect(root):
    url = urllib.parse.urlparse(root)
    return http.client.HTTPConnection(url.hostname, url.port, timeout=60)


def request(root, body):
    connection = connect(root)
    connection.request("POST", "/v1/completions", json.dumps(body),
                       {"Content-Type": "application/json"})
    return connection, connection.getresponse()


def complete(root, body, into):
    connection, response = request(root, body)
    into["status"] = response.status
    into["body"] = json.loads(response.read())
    connection.close()


def stream(root, body):
    """The open connection and response of a streamed completion, after its first chunk."""
    connection, response = request(root, dict(body, stream=True))
    first = response.readline()
    assert first.startswith(b"data: "), first
    return connection, response


def read_stream(response):
    tokens, reason, done = [], None, False
    for line in response:
        line = line.decode().strip()
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            done = True
            break
        choice = json.loads(line[6:])["choices"][0]
        tokens += choice["token_ids"]
        reason = choice["finish_reason"] or reason
    return tokens, reason, done


def freed_row(connection, remaining, waiting_thread, waiting, line):
    """Closes a running request's connection, then waits for the request
    queued behind it (4 tokens): (ok, line), ok when it finished in less
    than half the time the closed one still needed."""
    closed = time.monotonic()
    connection.sock.shutdown(2)
    connection.close()
    waiting_thread.join()
    waited = time.monotonic() - closed
    quick = waited < remaining / 2
    status = waiting["status"]
    ok = (status == 200 and len(waiting["body"]["choices"][0]["token_ids"]) == 4
          and quick)
    return ok, line.format("well before" if quick else "after") + (
        "" if status == 200 else f" (but answered {status}: {waiting['body']})")


def metric(root, name):
    connection = connect(root)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    return int(re.search(rf"^{name} (\d+)$", text, re.M).group(1))


def queue_depth(root):
    return metric(root, "tfmc_queue_depth")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("model")
    parser.add_argument("pid", type=int)
    args = parser.parse_args()
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line, flush=True)

    base = {"model": args.model, "temperature": 0}
    # 0. A client that sends half a request and stalls is dropped after the
    # server's --read-timeout (2 s here): it cannot hold a worker.
    url = urllib.parse.urlparse(args.root)
    slow = socket.create_connection((url.hostname, url.port), timeout=10)
    slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
    began = time.monotonic()
    answer = b""
    try:
        while chunk := slow.recv(4096):  # a 408, then the server closes
            answer += chunk
        closed = True
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        closed = False
    held = time.monotonic() - began
    slow.close()
    dropped = closed and 1.5 < held < 8 and answer.startswith(b"HTTP/1.1 408")
    report(dropped, f"a stalled client is dropped after the read timeout: {dropped}"
                    f"{' (' + answer.split(b'{', 1)[1].decode()[:120] + ')' if b'{' in answer else ''}")
    # 1. A runs, B waits, C is refused.
    a_connection, a_response = stream(args.root, dict(base, prompt=[1, 2, 3], max_tokens=1000))
    a_start, a_tokens = time.monotonic(), 0
    b = {}
    b_thread = threading.Thread(target=complete, args=(
        args.root, dict(base, prompt=[4, 5], max_tokens=4), b))
    b_thread.start()
    deadline = time.monotonic() + 10
    while queue_depth(args.root) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    c_connection, c_response = request(args.root, dict(base, prompt=[6], max_tokens=2))
    c_body = json.loads(c_response.read())
    retry = c_response.getheader("Retry-After", "")
    report(c_response.status == 429 and retry.isdigit() and int(retry) >= 1
           and c_body["error"]["code"] == "rate_limit_exceeded",
           f"queue full: {c_response.status}, Retry-After set: {retry.isdigit()}, "
           f"code {c_body['error']['code']}")
    c_connection.close()

    # 2. A's client goes away; B must not wait for A's remaining tokens.
    for _ in range(20):
        line = a_response.readline()
        a_tokens += line.startswith(b"data: ")
    rate = a_tokens / (time.monotonic() - a_start)
    remaining = (1000 - a_tokens) / rate
    report(*freed_row(a_connection, remaining, b_thread, b,
                      "cancelled stream freed its row: B done {} A's remaining time"))

    # 2b. The same when A is not streamed: nothing is written to its client
    # until it ends, so the server must notice the closed connection itself.
    a2_connection = connect(args.root)
    a2_connection.request("POST", "/v1/completions",
                          json.dumps(dict(base, prompt=[1, 2, 3], max_tokens=1000)),
                          {"Content-Type": "application/json"})
    a2_start = time.monotonic()
    deadline = a2_start + 10
    # A2 must hold the one row before B2 is sent: until B's row is taken down
    # A2 waits in the queue, and B2 would find the queue full (a quick 429).
    while ((metric(args.root, "tfmc_running_sequences"), queue_depth(args.root)) != (1, 0)
           and time.monotonic() < deadline):
        time.sleep(0.01)
    b2 = {}
    b2_thread = threading.Thread(target=complete, args=(
        args.root, dict(base, prompt=[4, 5], max_tokens=4), b2))
    b2_thread.start()
    while queue_depth(args.root) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    remaining = 1000 / rate - (time.monotonic() - a2_start)
    report(*freed_row(a2_connection, remaining, b2_thread, b2,
                      "cancelled non-streamed request freed its row: B2 done {} A2's remaining time"))

    # 3. SIGTERM with D running and E waiting: both finish whole.
    d_connection, d_response = stream(args.root, dict(base, prompt=[7, 8], max_tokens=300))
    e = {}
    e_thread = threading.Thread(target=complete, args=(
        args.root, dict(base, prompt=[9], max_tokens=5), e))
    e_thread.start()
    deadline = time.monotonic() + 10
    while queue_depth(args.root) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(args.pid, signal.SIGTERM)
    time.sleep(0.2)
    try:
        late_connection, late = request(args.root, dict(base, prompt=[1], max_tokens=1))
        refused = late.status == 503
    except (ConnectionError, OSError):
        refused = True
    report(refused, f"after SIGTERM a new request is refused: {refused}")
    d_tokens, d_reason, d_done = read_stream(d_response)
    e_thread.join()
    report(len(d_tokens) == 299 and d_reason == "length" and d_done,
           f"in flight at SIGTERM, streamed: {len(d_tokens) + 1} tokens, {d_reason}, [DONE]: {d_done}")
    report(e.get("status") == 200 and len(e["body"]["choices"][0]["token_ids"]) == 5
           and e["body"]["choices"][0]["finish_reason"] == "length",
           f"queued at SIGTERM: {e.get('status')}, "
           f"{len(e['body']['choices'][0]['token_ids']) if e.get('status') == 200 else 0} tokens, "
           f"{e['body']['choices'][0]['finish_reason'] if e.get('status') == 200 else e.get('body')}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
