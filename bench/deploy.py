"""bench/run.py's `deploy` section: issue 49's figures for deploying GPT-2 small
(examples/gpt_small.tfm, f32, the engines section's random weights: init-weights --seed 1):

  - single-file programs: the model compiled twice, plain (`--weights W` at run time) and with
    `--embed-weights W` (the program maps the weights from its own file, /proc/self/exe). Each
    runs `generate --prompt 464 --max-new-tokens 1 --stats --threads 2`, the smallest command
    that loads the weights (a 1-token prefill after them): the whole process's wall time and
    peak RSS (wait4's ru_maxrss), and from `--stats` the time from process start to the end of
    loading (its `before load` plus `load`) and the load itself. Both files are first put in the
    same state in the page cache: flushed, dropped (posix_fadvise DONTNEED) and read back once,
    because a file this machine has just written maps about ten times slower (~30 ms against
    ~3 ms for 475 MiB here) than one read back, which would charge the freshly compiled program
    for the page cache's history; then one untimed run of each, then RUNS runs of each,
    interleaved (the order alternating from pair to pair). Goal: embedded ÷ --weights <= 1.1x.
  - replicas behind HAProxy (examples/deploy/haproxy.cfg as it is tested, its addresses from the
    environment; server lines past the replica count removed): GPT-2 small compiled with
    `--max-batch 8`, `serve --host 127.0.0.1 --port 0`. The workload: REQUESTS non-streamed
    completions, each a prompt of PROMPT random ids, max_tokens NEW, temperature 0, sent
    CONCURRENCY at a time (Python http.client, a thread each); the figure is the generated
    tokens (the sum of usage.completion_tokens) over the wall time of the whole workload, for
      (a) one replica, --threads 2, directly;
      (b) the same replica behind HAProxy (the front's own cost);
      (c) three replicas, --threads 1 each, behind HAProxy;
      (d) two of those replicas behind an HAProxy of two server lines.
    All replicas and the three HAProxy processes run through the section (an idle replica takes
    no CPU); after one unmeasured round (CONCURRENCY requests for each set-up), ROUNDS rounds
    run the four set-ups in turn, each round starting one set-up later; figures are medians over
    the rounds. Each round sends fresh random prompts (no prefix-cache hits). Goal: (c) within
    10 % of (a).

The machine may be shared: each measurement waits until other processes leave the cores idle
(serve.py's Measure, with the replicas and HAProxy counted as this section's own) and is taken
again when they used more than a quarter of a core meanwhile.
"""

import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from run import (CACHE, OUT, ROOT, CommandFailed, Model, fmt_num, log, note, run_parts, table)
from serve import NOISY_CORES, QUIET_CORES, CpuWatch, Measure, median

THREADS = 2
RUNS = 21  # interleaved processes of each program (single-file part): the load's panel layout
#             moves by ±50 % from process to process on a 2-core VM
PROMPT_IDS = "464"
REQUESTS, CONCURRENCY, PROMPT, NEW = 32, 16, 64, 64
ROUNDS = 3
MAX_BATCH = 8
QUIET_BUDGET_S = 60  # how long the section may wait for a quiet machine, in all
REDO_S = 240  # a noisy measurement is taken again only this long into the section
HAPROXY_CFG = os.path.join(ROOT, "examples", "deploy", "haproxy.cfg")

_STARTUP = re.compile(r"^start-up: first token ([0-9.]+) ms after process start \(before load "
                      r"([0-9.]+) ms, load ([0-9.]+) ms, prefill ([0-9.]+) ms\)", re.M)
_LOAD = re.compile(r"^load: ([0-9.]+) ms \(map, page-in and check ([0-9.]+) ms", re.M)
_SERVING = re.compile(r": serving (\S+) on http://127\.0\.0\.1:([0-9]+)$", re.M)

# The set-ups of the replica part: (key, label, replicas' threads, replicas, behind HAProxy).
SETUPS = [("a", "one replica, --threads 2, directly", 2, 1, False),
          ("b", "one replica, --threads 2, behind HAProxy", 2, 1, True),
          ("c", "three replicas, --threads 1 each, behind HAProxy", 1, 3, True),
          ("d", "two replicas, --threads 1 each, behind HAProxy", 1, 2, True)]


class Watch(CpuWatch):
    """serve.py's CpuWatch with several processes of this section's own (replicas, HAProxy)."""

    def __init__(self):
        super().__init__()
        self.pids = []

    def _sample(self):
        now, busy, own = super()._sample()
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read().rsplit(")", 1)[1].split()
                own += int(stat[11]) + int(stat[12])  # utime, stime
            except (OSError, IndexError, ValueError):
                pass
        return now, busy, own


class Quiet(Measure):
    """serve.py's Measure with a budget of time spent waiting for a quiet machine (as
    llama32.py's Waits) and the section's own processes in its Watch: a measurement may be taken
    again throughout the section."""

    def __init__(self, budget_s, redo_s):
        super().__init__(redo_s)  # no measurement is taken again after redo_s
        self.budget_s = budget_s
        self.watch = Watch()

    def quiet(self):
        while self.waited_s < self.budget_s:
            self.watch.start()
            time.sleep(0.3)
            if self.watch.stop() < QUIET_CORES:
                return
            self.waited_s += 0.3


def cpu_ticks(pids):
    """utime + stime of the processes, in clock ticks."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            total += int(stat[11]) + int(stat[12])
        except (OSError, IndexError, ValueError):
            pass
    return total


# --------------------------------------------------------------------------
# Single-file programs
# --------------------------------------------------------------------------

def settle(paths):
    """Each file flushed, dropped from the page cache and read back once: the same state for all."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def load_once(cmd):
    """One `generate --stats` process: wall ms, peak RSS KiB, start-to-loaded ms, load ms,
    map/page-in ms."""
    log("$ " + " ".join(cmd))
    env = dict(os.environ, TFMC_CACHE_DIR=CACHE)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1e3
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise CommandFailed(f"exit {proc.returncode}: {' '.join(cmd)}\n{err[-1000:]}")
    m, l = _STARTUP.search(err), _LOAD.search(err)
    if not m or not l:
        raise CommandFailed("generate --stats printed no start-up or load line:\n" + err[-500:])
    return {"wall_ms": wall, "rss_kib": usage.ru_maxrss,
            "loaded_ms": float(m.group(2)) + float(m.group(3)), "load_ms": float(m.group(3)),
            "map_ms": float(l.group(2))}


def single_file(h, res, measure, weights):
    source = os.path.join(ROOT, "examples", "gpt_small.tfm")
    plain = Model("gpt_small_deploy", source_path=source).compile()
    plain.weights = weights
    plain.init_weights()
    embedded = Model("gpt_small_embedded", source_path=source).compile(
        extra=["--embed-weights", weights])
    res["sizes"] = {"plain": os.path.getsize(plain.exe), "embedded": os.path.getsize(embedded.exe),
                    "weights": os.path.getsize(weights)}
    res["compile_s"] = {"plain": plain.compile_seconds, "embedded": embedded.compile_seconds}
    tail = ["generate", "--prompt", PROMPT_IDS, "--max-new-tokens", "1", "--stats",
            "--threads", str(THREADS)]
    cmds = {"weights": [plain.exe, tail[0], "--weights", weights] + tail[1:],
            "embedded": [embedded.exe] + tail}
    res["single_commands"] = {k: " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                          for c in v) for k, v in cmds.items()}
    settle([plain.exe, weights, embedded.exe])
    for key in ("weights", "embedded"):  # untimed
        load_once(cmds[key])
    runs = {"weights": [], "embedded": []}
    runs_count = 5 if h.quick else RUNS
    for i in range(runs_count):
        for key in (("weights", "embedded") if i % 2 == 0 else ("embedded", "weights")):
            runs[key].append(measure(lambda: load_once(cmds[key])))
            runs[key][-1]["foreign"] = measure.foreign[-1]
    out = {}
    for key, rows in runs.items():
        out[key] = {f: median([r[f] for r in rows]) for f in rows[0]}
        out[key].update({f + "_min": min(r[f] for r in rows) for f in ("wall_ms", "loaded_ms")})
        out[key].update({f + "_max": max(r[f] for r in rows) for f in ("wall_ms", "loaded_ms")})
        out[key]["rss_max_kib"] = max(r["rss_kib"] for r in rows)
        out[key]["all"] = rows
    # Ratios of the medians, and the median of each pair's ratio.
    for f in ("wall_ms", "loaded_ms", "load_ms"):
        out["ratio_" + f] = out["embedded"][f] / out["weights"][f]
        out["pair_ratio_" + f] = median([e[f] / w[f] for e, w in zip(runs["embedded"],
                                                                      runs["weights"])])
    out["runs"] = runs_count
    return out


# --------------------------------------------------------------------------
# Replicas behind HAProxy
# --------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replica:
    """`NAME serve --host 127.0.0.1 --port 0 --threads T` as a child process."""

    def __init__(self, model, threads):
        self.cmd = [model.exe, "serve", "--weights", model.weights, "--host", "127.0.0.1",
                    "--port", "0", "--threads", str(threads)]
        self.lines, self.ready = [], threading.Event()
        self.proc = self.port = self.model_id = None

    def start(self, timeout=120):
        log("$ " + " ".join(self.cmd) + " &")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, TFMC_CACHE_DIR=CACHE))
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(timeout) or self.port is None:
            self.stop()
            raise CommandFailed("serve did not say it was serving:\n" + "".join(self.lines)[-1000:])
        return self

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = _SERVING.search(line.rstrip("\n"))
            if m and self.port is None:
                self.model_id, self.port = m.group(1), int(m.group(2))
                self.ready.set()
        self.ready.set()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def haproxy_config(count):
    """examples/deploy/haproxy.cfg with the server lines past `count` removed (its header: "add or
    remove `server` lines for another replica count"); the file itself for three."""
    if count == 3:
        return HAPROXY_CFG
    text = open(HAPROXY_CFG).read()
    kept = [line for line in text.splitlines(keepends=True)
            if not re.match(r"\s*server r(\d+) ", line) or int(re.match(r"\s*server r(\d+) ",
                                                                       line).group(1)) <= count]
    path = os.path.join(OUT, f"deploy_haproxy_{count}.cfg")
    with open(path, "w") as f:
        f.write("".join(kept))
    return path


class Front:
    """`haproxy -f CONFIG -db` with the replicas' addresses in the environment."""

    def __init__(self, haproxy, replicas, tag):
        self.port = free_port()
        self.socket = os.path.join(OUT, f"deploy_haproxy_{tag}.sock")
        self.config = haproxy_config(len(replicas))
        self.env = {"TFMC_FRONT": f"127.0.0.1:{self.port}", "TFMC_HAPROXY_STATS": self.socket,
                    "TFMC_CHECK_INTER": "200ms"}
        for i, r in enumerate(replicas, 1):
            self.env[f"TFMC_REPLICA{i}"] = f"127.0.0.1:{r.port}"
        self.names = [f"r{i}" for i in range(1, len(replicas) + 1)]
        self.cmd = [haproxy, "-f", self.config, "-db"]
        log("$ " + " ".join(f"{k}={v}" for k, v in self.env.items()) + " " + " ".join(self.cmd)
            + " &")
        self.log = open(os.path.join(OUT, f"deploy_haproxy_{tag}.log"), "w")
        self.proc = subprocess.Popen(self.cmd, env=dict(os.environ, **self.env),
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def states(self):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(self.socket)
                s.sendall(b"show stat\n")
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
        except OSError:
            return {}
        rows = [line.split(",") for line in data.decode().splitlines() if line and line[0] != "#"]
        return {row[1]: row[17] for row in rows if row[0] == "replicas" and row[1].startswith("r")}

    def wait_up(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.states() == {n: "UP" for n in self.names}:
                return
            time.sleep(0.05)
        raise CommandFailed(f"HAProxy's servers are {self.states()}, not all UP "
                            f"(bench/out/deploy_haproxy_*.log)")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def complete(port, model_id, prompt, new):
    """One non-streamed POST /v1/completions: (completion tokens, the replica that answered or
    None, an error or None)."""
    body = json.dumps({"model": model_id, "prompt": prompt, "max_tokens": new, "temperature": 0})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            return 0, None, f"HTTP {resp.status}: {data[:200].decode(errors='replace')}"
        answer = json.loads(data)
        return answer["usage"]["completion_tokens"], resp.getheader("X-Tfmc-Replica"), None
    except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
        return 0, None, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def workload(port, model_id, prompts, pids, new):
    """The prompts' completions, CONCURRENCY at a time: tokens/s over the whole wall time, the
    replicas' split, the cores the serving processes used."""
    results = [None] * len(prompts)
    lock = threading.Lock()
    pending = list(range(len(prompts)))

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                i = pending.pop(0)
            results[i] = complete(port, model_id, prompts[i], new)

    ticks = cpu_ticks(pids)
    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    cores = (cpu_ticks(pids) - ticks) / os.sysconf("SC_CLK_TCK") / seconds
    tokens = sum(r[0] for r in results)
    errors = [r[2] for r in results if r[2]]
    split = {}
    for _, replica, error in results:
        if not error:
            split[replica or "direct"] = split.get(replica or "direct", 0) + 1
    return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
            "errors": len(errors), "first_error": errors[0] if errors else None,
            "short": sum(1 for r in results if not r[2] and r[0] != new),
            "split": dict(sorted(split.items())), "cores": cores}


def replicas_part(h, res, measure):
    haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy")
                                          else None)
    if not haproxy:
        h.notes.append("deploy: no haproxy (Debian's `haproxy`; `make deps` installs it): the "
                       "replica set-ups were skipped.")
        return None
    version = subprocess.run([haproxy, "-v"], capture_output=True, text=True).stdout
    res["haproxy"] = version.splitlines()[0] if version else haproxy
    source = os.path.join(ROOT, "examples", "gpt_small.tfm")
    model = Model("gpt_small_b8", source_path=source).compile(extra=["--max-batch", str(MAX_BATCH)])
    model.weights = os.path.join(OUT, "gpt_small.safetensors")
    model.init_weights()
    started = []
    fronts = []
    try:
        one = Replica(model, 2).start()
        started.append(one)
        singles = [Replica(model, 1).start() for _ in range(3)]
        started += singles
        measure.watch.pids = [r.proc.pid for r in started]
        fronts = {"b": Front(haproxy, [one], "b"), "c": Front(haproxy, singles, "c"),
                  "d": Front(haproxy, singles[:2], "d")}
        measure.watch.pids += [f.proc.pid for f in fronts.values()]
        for f in fronts.values():
            f.wait_up()
        res["replica_commands"] = {
            "replica": " ".join([os.path.relpath(model.exe, ROOT), "serve", "--weights",
                                 os.path.relpath(model.weights, ROOT), "--host", "127.0.0.1",
                                 "--port", "0", "--threads", "T"]),
            "haproxy": " ".join(f"{k}=…" if k != "TFMC_CHECK_INTER" else f"{k}={v}"
                                for k, v in fronts["c"].env.items())
            + " haproxy -f examples/deploy/haproxy.cfg -db"}
        targets = {"a": (one.port, [one.proc.pid]),
                   "b": (fronts["b"].port, [one.proc.pid, fronts["b"].proc.pid]),
                   "c": (fronts["c"].port, [r.proc.pid for r in singles] + [fronts["c"].proc.pid]),
                   "d": (fronts["d"].port,
                         [r.proc.pid for r in singles[:2]] + [fronts["d"].proc.pid])}
        rng = random.Random(49)

        def prompts(count):
            return [[rng.randrange(50257) for _ in range(PROMPT)] for _ in range(count)]

        keys = [k for k, *_ in SETUPS]
        for key in keys:  # unmeasured: page cache, arenas' and KV caches' first touch
            port, pids = targets[key]
            warm = workload(port, one.model_id, prompts(CONCURRENCY), pids, res["new_tokens"])
            if warm["errors"]:
                raise CommandFailed(f"deploy ({key}) warm-up: {warm['errors']} failed requests: "
                                    f"{warm['first_error']}")
            time.sleep(0.5)
        rows = {k: [] for k in keys}
        for r in range(res["rounds"]):
            for key in keys[r % len(keys):] + keys[:r % len(keys)]:
                port, pids = targets[key]
                batch = prompts(REQUESTS)
                rows[key].append(measure(lambda: workload(port, one.model_id, batch, pids,
                                                          res["new_tokens"])))
                rows[key][-1]["foreign"] = measure.foreign[-1]
                log(f"deploy ({key}) round {r}: " + json.dumps(rows[key][-1]))
                time.sleep(0.5)  # the replicas' workers stop spinning
        out = {}
        for key in keys:
            runs = rows[key]
            tps = [x["tokens_per_s"] for x in runs]
            out[key] = {"tokens_per_s": median(tps), "min": min(tps), "max": max(tps),
                        "cores": median([x["cores"] for x in runs]),
                        "foreign": median([x["foreign"] for x in runs]),
                        "errors": sum(x["errors"] for x in runs),
                        "short": sum(x["short"] for x in runs),
                        "first_error": next((x["first_error"] for x in runs if x["first_error"]),
                                            None),
                        "splits": [x["split"] for x in runs], "all": runs}
        return out
    finally:
        for f in (fronts.values() if isinstance(fronts, dict) else fronts):
            f.stop()
        for r in started:
            r.stop()


# --------------------------------------------------------------------------
# The section
# --------------------------------------------------------------------------

def run_deploy(h):
    note("deploy: GPT-2 small as one file (--embed-weights) against --weights, and replicas "
         "behind HAProxy against one replica on all cores")
    res = {"threads": THREADS, "requests": REQUESTS, "concurrency": CONCURRENCY, "prompt": PROMPT,
           "new_tokens": 16 if h.quick else NEW, "rounds": 1 if h.quick else ROUNDS,
           "max_batch": MAX_BATCH}
    h.results["deploy"] = res
    measure = Quiet(QUIET_BUDGET_S, REDO_S)
    weights = os.path.join(OUT, "gpt_small.safetensors")
    run_parts(h, res, [("single", lambda: single_file(h, res, measure, weights)),
                       ("replicas", lambda: replicas_part(h, res, measure))], "deploy:")
    res["foreign"] = {"median": median(measure.foreign) if measure.foreign else None,
                      "max": max(measure.foreign) if measure.foreign else None,
                      "redone": measure.redone, "waited_s": measure.waited_s}
    for key in ("single", "replicas", "foreign"):
        r = res.get(key)
        if r:
            log(f"deploy {key}: " + json.dumps(r, default=str)[:4000])


def goals(res):
    """[(goal, measured, target, met or None)] of issue 49."""
    out = []
    s = res.get("single")
    if s:
        r = s["ratio_loaded_ms"]
        out.append(("single file: process start to the end of loading, embedded ÷ --weights",
                    f"{s['embedded']['loaded_ms']:.1f} ÷ {s['weights']['loaded_ms']:.1f} ms = "
                    f"{r:.3f}×", "≤ 1.10×", r <= 1.1))
        r = s["ratio_wall_ms"]
        out.append(("single file: whole `generate` process (1-token prompt, 1 new token), "
                    "embedded ÷ --weights",
                    f"{s['embedded']['wall_ms']:.1f} ÷ {s['weights']['wall_ms']:.1f} ms = "
                    f"{r:.3f}×", "≤ 1.10×", r <= 1.1))
    else:
        out.append(("single file: load, embedded ÷ --weights", "n/a", "≤ 1.10×", None))
    rep = res.get("replicas")
    if rep and rep.get("a") and rep.get("c"):
        r = rep["c"]["tokens_per_s"] / rep["a"]["tokens_per_s"]
        out.append(("3 replicas (--threads 1) behind HAProxy ÷ 1 replica (--threads 2): "
                    "aggregate tokens/s",
                    f"{rep['c']['tokens_per_s']:.1f} ÷ {rep['a']['tokens_per_s']:.1f} = {r:.3f}×",
                    "≥ 0.90×", r >= 0.9))
    else:
        out.append(("3 replicas behind HAProxy ÷ 1 replica: aggregate tokens/s", "n/a", "≥ 0.90×",
                    None))
    return out


def render(rep):
    res = rep.h.results.get("deploy")
    if not res:
        return
    add = rep.add
    s, reps = res.get("single"), res.get("replicas")
    add("## 15. Issue 49: deploying GPT-2 small: one file, and replicas behind HAProxy")
    add()
    lim = rep.h.results.get("limits") or {}
    read = (lim.get("read") or {}).get(max(rep.h.threads))
    add(f"Machine: {_cpu()}, {rep.h.all_threads} hardware threads, "
        f"{'AVX-512' if rep.h.avx512 else 'AVX2 only'}"
        + (f"; read bandwidth {read['gbs']:.1f} GB/s at {max(rep.h.threads)} threads (section 1, "
           f"same run)" if read else "") + ". examples/gpt_small.tfm, f32, the engines section's "
        "random weights (`init-weights --seed 1`, bench/out/gpt_small.safetensors), bench/deploy.py.")
    add()
    if s:
        add(f"### Single-file programs (`--embed-weights`) against `--weights`")
        add()
        add(f"`tfmc examples/gpt_small.tfm -o gpt_small_deploy` and `tfmc examples/gpt_small.tfm "
            f"-o gpt_small_embedded --embed-weights bench/out/gpt_small.safetensors` "
            f"({_sizes(res)}). "
            f"Each process: `{s_cmd(res, 'weights')}` and `{s_cmd(res, 'embedded')}`, "
            f"the smallest command that loads the weights (it then runs a 1-token prefill). Both "
            f"files flushed, dropped from the page cache (`posix_fadvise DONTNEED`) and read back "
            f"once first (a file just written maps ~10× slower here than one read back, ~30 against "
            f"~3 ms: that would charge the new program for the page cache's history); one untimed "
            f"run of each, then {s['runs']} of each, interleaved (the order alternating pair by "
            f"pair): median [min–max]. Start to loaded: `--stats`' `before load` + `load` (from "
            f"process start to the weights mapped, checked and laid out in panels); map: `load`'s "
            f"`map, page-in and check`; peak RSS: wait4's ru_maxrss (median; max in parentheses).")
        add()
        rows = []
        for key, name in (("weights", "`--weights W.safetensors`"),
                          ("embedded", "`--embed-weights` (one file)")):
            r = s[key]
            rows.append([name, f"{r['wall_ms']:.1f} [{r['wall_ms_min']:.1f}–{r['wall_ms_max']:.1f}]",
                         f"{r['loaded_ms']:.1f} [{r['loaded_ms_min']:.1f}–"
                         f"{r['loaded_ms_max']:.1f}]", f"{r['load_ms']:.1f}",
                         f"{r['map_ms']:.1f}",
                         f"{r['rss_kib'] / 1024:.0f} ({r['rss_max_kib'] / 1024:.0f})"])
        rows.append(["embedded ÷ --weights (medians; median of the pairs' ratios)",
                     f"{s['ratio_wall_ms']:.2f}× ({s['pair_ratio_wall_ms']:.2f}×)",
                     f"{s['ratio_loaded_ms']:.2f}× ({s['pair_ratio_loaded_ms']:.2f}×)",
                     f"{s['ratio_load_ms']:.2f}× ({s['pair_ratio_load_ms']:.2f}×)", "",
                     f"{s['embedded']['rss_kib'] / s['weights']['rss_kib']:.2f}×"])
        add(table(["program", "whole process, wall (ms)", "start to loaded (ms)", "load (ms)",
                   "map, page-in, check (ms)", "peak RSS (MiB)"], rows))
        add()
        add(f"Other processes used {s['weights']['foreign']:.2f} and {s['embedded']['foreign']:.2f} "
            f"cores (medians) during the `--weights` and the embedded runs.")
        add()
    if reps:
        add("### Replicas behind HAProxy against one replica on all cores")
        add()
        add(f"The model compiled with `--max-batch {res['max_batch']}`; replicas: "
            f"`{res['replica_commands']['replica']}` (T = 2 or 1); the front: "
            f"`{res['replica_commands']['haproxy']}` ({res.get('haproxy', 'HAProxy')}; the `server` "
            f"lines past the replica count removed for (b) and (d); prefix-affine hashing on the "
            f"body's first 256 bytes as configured). Workload: {res['requests']} non-streamed "
            f"POST /v1/completions, each {res['prompt']} random prompt ids, `max_tokens` "
            f"{res['new_tokens']}, temperature 0, {res['concurrency']} at a time (Python "
            f"http.client, a thread each, on the same cores); tokens/s: the sum of "
            f"`usage.completion_tokens` over the workload's wall time. All processes run "
            f"throughout; after an unmeasured round of {res['concurrency']} requests per set-up, "
            f"{res['rounds']} round{'s' if res['rounds'] != 1 else ''} run the set-ups in turn (each round starting one later), "
            f"fresh prompts each time: median [min–max] over the rounds. Cores: the serving "
            f"processes' CPU time over the wall time; others: what other processes used meanwhile "
            f"(both medians). Requests per replica: HAProxy's "
            f"`X-Tfmc-Replica`, per round. With {res['concurrency']} requests in flight and "
            f"`--max-batch {res['max_batch']}`, (a) and (b) decode batches of {res['max_batch']} "
            f"(the rest wait in the queue), (d) batches of up to {res['max_batch']} per replica, "
            f"(c) about {res['concurrency'] / 3:.0f} per replica; every replica's step reads all "
            f"the weights (its own panels, laid out at load), and (c) runs 3 threads on the 2 cores.")
        add()
        rows = []
        base = (reps.get("a") or {}).get("tokens_per_s")
        for key, label, *_ in SETUPS:
            r = reps.get(key)
            if not r:
                continue
            split = "; ".join("/".join(str(v) for v in sp.values()) for sp in r["splits"])
            rows.append([f"({key}) {label}",
                         f"{r['tokens_per_s']:.1f} [{r['min']:.1f}–{r['max']:.1f}]",
                         f"{r['tokens_per_s'] / base:.2f}×" if base else "n/a",
                         f"{r['cores']:.2f}", f"{r['foreign']:.2f}", split,
                         f"{r['errors']}" + (f" ({r['first_error']})" if r["first_error"] else "")
                         + (f", {r['short']} short" if r["short"] else "")])
        add(table(["set-up", "generated tokens/s", "÷ (a)", "cores", "others (cores)", "requests per replica, "
                   "per round", "failed"], rows))
        add()
        if reps.get("a") and reps.get("c"):
            a, c = reps["a"]["tokens_per_s"], reps["c"]["tokens_per_s"]
            d = (reps.get("d") or {}).get("tokens_per_s")
            b = (reps.get("b") or {}).get("tokens_per_s")
            add(f"(c) ÷ (a) = {c / a:.2f}×" + (f", (d) ÷ (a) = {d / a:.2f}×" if d else "")
                + (f", (b) ÷ (a) = {b / a:.2f}× (the front's own cost)" if b else "") + ".")
            add()
    fr = res.get("foreign")
    if fr and fr.get("median") is not None:
        add(f"Other processes during the measurements: {fr['median']:.2f} cores median, "
            f"{fr['max']:.2f} max; {fr['redone']} measurements taken again (more than "
            f"{NOISY_CORES} cores); {fr['waited_s']:.0f} s waited for a quiet machine (under "
            f"{QUIET_CORES} cores).")
        add()
    out = goals(res)
    add("### Issue 49's goals (this run)")
    add()
    add(table(["goal", "this run", "target", ""],
              [[g, v, t, "not measured" if m is None else ("met" if m else "**not met**")]
               for g, v, t, m in out]))
    add()
    if s:
        rep.summary.append(["GPT-2 small one-file program (`--embed-weights`): start to loaded, ms",
                            fmt_num(s["embedded"]["loaded_ms"]),
                            fmt_num(s["weights"]["loaded_ms"]) + " (`--weights`)",
                            f"{s['weights']['loaded_ms'] / s['embedded']['loaded_ms']:.2f}×", ""])
    if reps and reps.get("a") and reps.get("c"):
        rep.summary.append(["3 replicas (1 thread) behind HAProxy: generated tokens/s (GPT-2 small)",
                            fmt_num(reps["c"]["tokens_per_s"]),
                            fmt_num(reps["a"]["tokens_per_s"]) + " (1 replica, 2 threads)",
                            f"{reps['a']['tokens_per_s'] / reps['c']['tokens_per_s']:.2f}×", ""])


def _cpu():
    from report import cpu_model  # bench/report.py
    return cpu_model()


def _sizes(res):
    z = res.get("sizes")
    if not z:
        return "sizes n/a"
    return (f"executables {z['plain'] / 2**20:.1f} MiB and {z['embedded'] / 2**20:.1f} MiB, the "
            f"weights file {z['weights'] / 2**20:.1f} MiB")


def s_cmd(res, key):
    return res.get("single_commands", {}).get(key, "?")
