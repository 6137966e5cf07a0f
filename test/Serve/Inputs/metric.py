"""Prints the lines of a server's /metrics whose metric is NAME.

    python3 metric.py ROOT_URL NAME

Exits 1 when the server does not answer or has no such metric."""

import sys
import urllib.request


def main():
    root, name = sys.argv[1], sys.argv[2]
    with urllib.request.urlopen(root + "/metrics", timeout=30) as response:
        text = response.read().decode("utf-8")
    lines = [line for line in text.splitlines()
             if line.split(" ")[0].split("{")[0] == name]
    if not lines:
        sys.exit(f"metric.py: /metrics has no {name}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
