#!/usr/bin/env python3
"""error_cases.py BINARY CASES [KEY=VALUE]...: runs BINARY once per line of
CASES (its arguments, split as a shell would, with each {KEY} replaced by
its VALUE; '#' lines and blank lines are skipped) and prints, per case, one
line:
  exit=CODE stdout=BYTES stderr-lines=N: FIRST STDERR LINE
so that one FileCheck file checks that each bad input is a one-line error
with exit code 1 and no output. Exits 1 if a case did not fail that way;
such a case's arguments, stdout and whole stderr go to stderr at once (lit
shows them before FileCheck's mismatch)."""
import shlex
import subprocess
import sys

binary, cases = sys.argv[1], sys.argv[2]
values = dict(arg.split("=", 1) for arg in sys.argv[3:])
ok = True
for line in open(cases, encoding="utf-8"):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    args = shlex.split(line)
    for key, value in values.items():
        args = [a.replace("{%s}" % key, value) for a in args]
    run = subprocess.run([binary] + args, capture_output=True)
    err = run.stderr.decode("utf-8", "replace").splitlines()
    print("exit=%d stdout=%d stderr-lines=%d: %s"
          % (run.returncode, len(run.stdout), len(err), err[0] if err else ""))
    if run.returncode != 1 or run.stdout or len(err) != 1:
        ok = False
        sys.stdout.flush()
        print("error_cases.py: %s did not fail as one line with exit 1: exit %d\n"
              "  stdout: %r\n  stderr:\n%s"
              % (shlex.join(args), run.returncode, run.stdout[:500],
                 "\n".join("    " + l for l in err[:20])), file=sys.stderr, flush=True)
sys.exit(0 if ok else 1)
