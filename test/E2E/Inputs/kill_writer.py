#!/usr/bin/env python3
"""kill_writer.py PROGRAM OUT: runs `PROGRAM init-weights --output OUT`,
waits until its temporary next to OUT holds at least 1 MiB (the data is
being written), and kills it with SIGKILL. Exits 1 when the writer could
not be caught mid-write (it finished or died first) in 5 attempts, so the
test fails rather than passing without having killed anything."""
import glob
import os
import signal
import subprocess
import sys
import time

program, out = sys.argv[1], sys.argv[2]
for attempt in range(5):
    writer = subprocess.Popen([program, "init-weights", "--seed", "1", "--output", out],
                              stderr=subprocess.DEVNULL)
    killed = False
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline:
        sizes = [os.path.getsize(p) for p in glob.glob(glob.escape(out) + ".tmp-*")
                 if os.path.exists(p)]
        if any(size >= 1 << 20 for size in sizes):
            writer.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.0005)
    writer.wait()
    for path in glob.glob(glob.escape(out) + ".tmp-*"):
        os.unlink(path)
    if killed and writer.returncode == -signal.SIGKILL:
        print(f"killed mid-write (attempt {attempt + 1})")
        sys.exit(0)
sys.exit("the writer was never caught mid-write")
