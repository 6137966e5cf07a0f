#!/usr/bin/env python3
"""Lists the RUN lines under the given folders where `not` runs a program of
ours without checking that it failed with its one-line message. lit's `not`
also succeeds when the program crashes, so each such command must send the
program's stderr to a file (`2> FILE`, or `> FILE 2>&1`) that a later
command (on the same RUN line after `&&`, or a later RUN line) checks with
FileCheck (`FileCheck ... < FILE`) and counts as one line (`count 1 < FILE`).
Exempt: `not` before a standard tool (grep, ls, test, diff, cmp), which checks
a file, not an error message; and tfm-opt and tfmc-codegen, whose MLIR
diagnostics are an error plus notes (`2>&1 | FileCheck` is enough there).
Prints
`ok: N not commands checked` or one line per offence, and exits 1 on any."""
import os
import re
import sys

EXEMPT = {"grep", "ls", "test", "diff", "cmp",
          "%python"}  # a script's multi-line report, which its own test reads
MULTI_LINE_DIAGNOSTICS = {"tfm-opt", "tfmc-codegen"}


def run_commands(path):
    """(line number, command) for every command of every RUN line, split at &&."""
    with open(path, errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = re.search(r"\bRUN:(.*)$", line)
            if m:
                for command in m.group(1).split("&&"):
                    yield number, command.strip()


def reads(command, tool, name):
    return command.startswith(tool) and re.search(
        r"(<|--input-file[ =])\s*" + re.escape(name) + r"(\s|$)", command)


def offences(path):
    commands = list(run_commands(path))
    for i, (number, cmd) in enumerate(commands):
        m = re.match(r"not\s+(?:--crash\s+)?(?:env\s+(?:\S+=\S+\s+)*)?(\S+)", cmd)
        if not m:
            continue
        program = os.path.basename(m.group(1))
        if program in EXEMPT:
            continue
        if program in MULTI_LINE_DIAGNOSTICS and re.search(r"2>&1\s*\|\s*FileCheck", cmd):
            continue
        target = re.search(r"(?<![0-9&])2>(?!&)\s*(\S+)", cmd) or \
            (re.search(r"2>&1", cmd) and re.search(r"(?<![0-9])>\s*(\S+)", cmd))
        later = [c for _, c in commands[i + 1:]]
        if not target:
            yield f"{path}:{number}: `not` whose stderr goes to no file: {cmd}"
            continue
        name = target.group(1)
        if not any(reads(c, "FileCheck", name) for c in later):
            yield f"{path}:{number}: `not` whose message no FileCheck reads: {cmd}"
        elif program in MULTI_LINE_DIAGNOSTICS:
            continue
        elif not any(re.match(r"count\s+1\s*<\s*" + re.escape(name) + r"(\s|$)", c) for c in later):
            yield f"{path}:{number}: `not` whose message is not counted as one line (count 1 < {name}): {cmd}"


def main():
    count, bad = 0, []
    for root in sys.argv[1:]:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in ("Inputs", "fixtures", "unit", "tools"))
            for name in sorted(files):
                if name.endswith((".test", ".tfm", ".mlir")):
                    path = os.path.join(folder, name)
                    count += sum(1 for _, c in run_commands(path) if c.startswith("not "))
                    bad += list(offences(path))
    for line in bad:
        print(line)
    if not bad:
        print(f"ok: {count} not commands checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
