#!/usr/bin/env python3
"""max_rss.py LIMIT_MIB COMMAND...: runs COMMAND (its output passed
through) and fails, naming the figure, when its peak resident memory
(getrusage's ru_maxrss of the child) exceeds LIMIT_MIB; exits with the
command's status otherwise. For inputs that once made a program allocate
gigabytes: the test then says how much, not just "killed"."""
import resource
import subprocess
import sys

limit_mib = float(sys.argv[1])
status = subprocess.run(sys.argv[2:]).returncode
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
if peak_mib > limit_mib:
    sys.exit(f"max_rss.py: {sys.argv[2]} peaked at {peak_mib:.0f} MiB, over the limit of {limit_mib:.0f} MiB")
sys.exit(status)
