#!/usr/bin/env python3
"""Lists the RUN lines under the given folders where `not` runs a program of
ours without checking its message. lit's `not` also succeeds when the
program crashes, so each such line must send the program's stderr to
FileCheck: `2>&1 | FileCheck ...` on the line, or `2> FILE` (or
`> FILE 2>&1`) and a later RUN line that reads FILE with FileCheck.
`not` before a standard tool (grep, ls, test, diff, cmp) is exempt: it
checks a file, not an error message. Prints `ok: N not lines checked` or
one line per offence, and exits 1 on any."""
import os
import re
import sys

EXEMPT = {"grep", "ls", "test", "diff", "cmp"}


def run_lines(path):
    with open(path, errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = re.search(r"\bRUN:(.*)$", line)
            if m:
                yield number, m.group(1).strip()


def offences(path):
    lines = list(run_lines(path))
    for i, (number, cmd) in enumerate(lines):
        m = re.match(r"not\s+(?:--crash\s+)?(?:env\s+(?:\S+=\S+\s+)*)?(\S+)", cmd)
        if not m:
            continue
        if os.path.basename(m.group(1)) in EXEMPT:
            continue
        yield_ok = False
        if re.search(r"2>&1\s*\|\s*FileCheck", cmd):
            yield_ok = True
        else:
            target = re.search(r"(?<![0-9&])2>(?!&)\s*(\S+)", cmd) or \
                (re.search(r"2>&1", cmd) and re.search(r"(?<![0-9])>\s*(\S+)", cmd))
            if target:
                name = target.group(1)
                yield_ok = any("FileCheck" in later and re.search(
                    r"(<|--input-file[ =])\s*" + re.escape(name) + r"(\s|$)", later)
                    for _, later in lines[i + 1:])
        if not yield_ok:
            yield f"{path}:{number}: `not` without a FileCheck of its message: {cmd}"


def main():
    count, bad = 0, []
    for root in sys.argv[1:]:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in ("Inputs", "fixtures", "unit", "tools"))
            for name in sorted(files):
                if name.endswith((".test", ".tfm", ".mlir")):
                    path = os.path.join(folder, name)
                    count += sum(1 for _, c in run_lines(path) if c.startswith("not "))
                    bad += list(offences(path))
    for line in bad:
        print(line)
    if not bad:
        print(f"ok: {count} not lines checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
