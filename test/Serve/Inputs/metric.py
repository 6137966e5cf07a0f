"""Prints the lines of a server's /metrics whose metric is NAME.

    python3 metric.py ROOT_URL NAME [--wait-for VALUE]

With --wait-for, asks again (for up to 30 s) until the metric's value is
VALUE: a gauge the server's batcher thread updates just after the last
response went out. Exits 1 when the server does not answer or has no such
metric."""

import sys
import time
import urllib.request


def read(root, name):
    with urllib.request.urlopen(root + "/metrics", timeout=30) as response:
        text = response.read().decode("utf-8")
    lines = [line for line in text.splitlines()
             if line.split(" ")[0].split("{")[0] == name]
    if not lines:
        sys.exit(f"metric.py: /metrics has no {name}")
    return lines


def main():
    root, name = sys.argv[1], sys.argv[2]
    wanted = sys.argv[4] if sys.argv[3:4] == ["--wait-for"] else None
    lines = read(root, name)
    deadline = time.monotonic() + 30
    while (wanted is not None and lines[0].split(" ")[-1] != wanted
           and time.monotonic() < deadline):
        time.sleep(0.05)
        lines = read(root, name)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
