"""Runs commands against a `NAME serve` it starts (lit's shell has no `&`).

    python3 with_server.py [--ready-timeout S] [--stop-timeout S]
        [--server-log FILE] [--commands-stop-it]
        SERVER_COMMAND... -- COMMAND... [-- COMMAND...]

Starts SERVER_COMMAND (give it --port 0), waits for the one line it prints
on stderr when ready, `NAME: serving MODEL_ID on http://HOST:PORT`, then
runs each COMMAND in turn, with @BASE_URL@ in its arguments replaced by
http://HOST:PORT/v1, @ROOT_URL@ by http://HOST:PORT, @PORT@ by the port and
@MODEL@ by MODEL_ID and @SERVER_PID@ by the server's process id; their
output is this script's. Then it sends the server SIGTERM (unless
--commands-stop-it: the commands signal it themselves), which must end it
with exit status 0 within --stop-timeout, and prints `server: exit 0 after
SIGTERM`. The server's stderr goes to
--server-log (else to this script's stderr).

Exits 1 when the server is not ready in time, exits before it is stopped,
or does not exit 0 on SIGTERM; else with the first failing command's
status (0 when all pass).
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

READY = re.compile(r"^(\S+): serving (.+) on (http://([^\s:/]+):([0-9]+))$")


def fail(message):
    sys.stdout.flush()
    sys.stderr.write(f"with_server.py: {message}\n")
    sys.exit(1)


def main():
    argv = sys.argv[1:]
    options = {"--ready-timeout": "60", "--stop-timeout": "30", "--server-log": None}
    commands_stop_it = False
    while argv and (argv[0] in options or argv[0] == "--commands-stop-it"):
        if argv[0] == "--commands-stop-it":
            commands_stop_it = True
            argv = argv[1:]
            continue
        if len(argv) < 2:
            fail(f"{argv[0]} needs a value")
        options[argv[0]] = argv[1]
        argv = argv[2:]
    segments = [[]]
    for arg in argv:
        if arg == "--":
            segments.append([])
        else:
            segments[-1].append(arg)
    server_command, commands = segments[0], segments[1:]
    if not server_command or not commands or not all(commands):
        fail("usage: with_server.py [options] SERVER_COMMAND... -- COMMAND... [-- COMMAND...]")

    log = open(options["--server-log"], "w") if options["--server-log"] else sys.stderr
    server = subprocess.Popen(server_command, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.PIPE, text=True, errors="replace")
    ready = threading.Event()
    found = {}

    def drain():
        # Every stderr line goes to the log; the first ready line is parsed.
        for line in server.stderr:
            log.write(line)
            log.flush()
            match = READY.match(line.rstrip("\n"))
            if match and not ready.is_set():
                found.update(model=match.group(2), root=match.group(3), port=match.group(5))
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + float(options["--ready-timeout"])
    while not ready.wait(0.05):
        if time.monotonic() > deadline:
            server.kill()
            fail(f"the server printed no ready line in {options['--ready-timeout']} s: "
                 f"{' '.join(server_command)}")
    if not found:
        status = server.wait()
        fail(f"the server exited with status {status} before it was ready: {' '.join(server_command)}")

    replacements = {"@BASE_URL@": found["root"] + "/v1", "@ROOT_URL@": found["root"],
                    "@PORT@": found["port"], "@MODEL@": found["model"],
                    "@SERVER_PID@": str(server.pid)}
    status = 0
    for command in commands:
        command = [replace_all(arg, replacements) for arg in command]
        sys.stdout.flush()
        status = subprocess.call(command)
        if status != 0:
            sys.stderr.write(f"with_server.py: {' '.join(command)} exited with status {status}\n")
            break
        if server.poll() is not None and not commands_stop_it:
            fail(f"the server exited (status {server.returncode}) while it was in use")

    if commands_stop_it:
        pass
    elif server.poll() is not None:
        fail(f"the server exited (status {server.returncode}) before it was stopped")
    else:
        server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(float(options["--stop-timeout"]))
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        fail(f"the server did not exit within {options['--stop-timeout']} s of SIGTERM")
    reader.join(5)
    if code != 0:
        fail(f"the server exited with status {code} after SIGTERM, not 0")
    print("server: exit 0 after SIGTERM", flush=True)
    sys.exit(status)


def replace_all(arg, replacements):
    for key, value in replacements.items():
        arg = arg.replace(key, value)
    return arg


if __name__ == "__main__":
    main()
