#!/usr/bin/env python3
"""Runs every unit (GoogleTest) and lit test and prints one closing line,
`N passed, N failed` (`, N skipped` when some were skipped).

Skipped tests (lit UNSUPPORTED, GTEST_SKIP, a DISABLED_ gtest) are never
counted as passed. Every gtest binary that test/unit/CMakeLists.txt defines
must exist in the build tree: a missing one is a failure, not a smaller
total. Exit status is 1 when anything failed or when no test ran at all.

With --sanitizer-logs DIR (`make check-sanitize`: ASAN_OPTIONS and
UBSAN_OPTIONS write their reports under DIR), every report written during the
run counts as one more failure and is printed, whichever test's process wrote
it: a test that expects a failure (`not tfmc ...`) would otherwise pass on a
sanitizer's exit code.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

LIT = "/usr/lib/llvm-19/build/utils/lit/lit.py"


def count_sanitizer_reports(log_dir):
    """Prints each sanitizer report in log_dir and returns how many there
    are: each one is a failure of the run. Errors (ASan, LSan: "ERROR:
    ...Sanitizer"; UBSan: "runtime error:") count; a file with only warnings
    (ASan's note that Halide's compiler switches stacks with swapcontext) does
    not. Harness/sanitizer-logs.test checks this counting."""
    reports = warnings = 0
    for path in sorted(glob.glob(os.path.join(log_dir, "*"))):
        with open(path, errors="replace") as f:
            text = f.read()
        if "ERROR: " in text or "runtime error:" in text:
            reports += 1
            print(f"== sanitizer report {path}")
            print(text)
        else:
            warnings += 1
    if warnings:
        print(f"note: {warnings} sanitizer log(s) with warnings only in {log_dir}")
    return reports


# The kernel tests JIT-compile hundreds of Halide pipelines, one core each,
# and touch no files: they run in 4 shards per core, as many at once as
# there are cores (gtest's GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX split the
# tests round-robin; every test runs in exactly one shard; small shards
# even out the few heavy tests). On 2 cores tfmc-cpu-kernels-tests took 136
# s in one process (396 s under the sanitizers), 102 s in 2 shards.
SHARDED = {"tfmc-cpu-kernels-tests", "tfmc-gpu-kernels-tests"}


def run_gtest(binary, xml_path):
    """Runs one gtest binary (in shards, for SHARDED); returns (passed,
    failed, skipped)."""
    cores = max(1, os.cpu_count() or 1)
    shards = 4 * cores if os.path.basename(binary) in SHARDED else 1

    def run_shard(index):
        path = xml_path if shards == 1 else f"{xml_path}.{index}"
        env = dict(os.environ)
        if shards > 1:
            env.update(GTEST_TOTAL_SHARDS=str(shards), GTEST_SHARD_INDEX=str(index))
        proc = subprocess.run([binary, f"--gtest_output=xml:{path}", "--gtest_brief=1"],
                              env=env)
        return path, proc.returncode

    with concurrent.futures.ThreadPoolExecutor(cores) as pool:
        runs = list(pool.map(run_shard, range(shards)))
    # A shard's XML lists only its own tests (gtest reports no test of
    # another shard), so the shards' counts add up.
    passed = failed = skipped = 0
    for path, returncode in runs:
        if not os.path.exists(path):
            print(f"error: {binary} wrote no results (exit {returncode})")
            failed += 1
            continue
        shard_failed = 0
        for case in ET.parse(path).getroot().iter("testcase"):
            if case.find("failure") is not None:
                shard_failed += 1
            elif case.get("result") in ("skipped", "suppressed") or case.find("skipped") is not None:
                # "suppressed": a DISABLED_ test, which gtest lists but never runs.
                skipped += 1
            else:
                passed += 1
        if returncode != 0 and shard_failed == 0:
            print(f"error: {binary} exited {returncode} with no failed test")
            shard_failed += 1
        failed += shard_failed
    return passed, failed, skipped


def run_lit(build_dir, xml_path, kernel_cache=None):
    """Runs the lit suite; returns (passed, failed, skipped)."""
    cmd = [sys.executable, LIT, "-sv", f"--xunit-xml-output={xml_path}"]
    if kernel_cache:
        cmd.append(f"--param=kernel_cache={os.path.abspath(kernel_cache)}")
    cmd.append(os.path.join(build_dir, "test"))
    proc = subprocess.run(cmd)
    if not os.path.exists(xml_path):
        print(f"error: lit wrote no results (exit {proc.returncode})")
        return 0, 1, 0
    passed = failed = skipped = 0
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    if proc.returncode != 0 and failed == 0:
        failed += 1
    return passed, failed, skipped


def expected_unit_tests():
    """The gtest binaries test/unit/CMakeLists.txt defines (add_executable of a
    tfmc-*-tests target): the list of binaries that must be there."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unit", "CMakeLists.txt")
    with open(path) as f:
        text = f.read()
    return sorted(set(re.findall(r"add_executable\(\s*(tfmc-[A-Za-z0-9_-]+-tests)\b", text)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--sanitizer-logs", help="directory the sanitizers write their reports to")
    parser.add_argument("--kernel-cache", help="the kernel cache lit's tests share (default: BUILD_DIR/kernel-cache)")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    if args.sanitizer_logs:
        shutil.rmtree(args.sanitizer_logs, ignore_errors=True)
        os.makedirs(args.sanitizer_logs)

    totals = [0, 0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        unit_dir = os.path.join(build_dir, "test", "unit")
        expected = expected_unit_tests()
        if not expected:
            print("error: test/unit/CMakeLists.txt defines no tfmc-*-tests binary")
            totals[1] += 1
        for name in expected:
            if not os.access(os.path.join(unit_dir, name), os.X_OK):
                print(f"error: {os.path.join(unit_dir, name)} is missing (test/unit/CMakeLists.txt defines it)")
                totals[1] += 1
        binaries = sorted(glob.glob(os.path.join(unit_dir, "tfmc-*-tests")))
        for binary in binaries:
            print(f"== {os.path.basename(binary)}", flush=True)
            result = run_gtest(binary, os.path.join(tmp, os.path.basename(binary) + ".xml"))
            totals = [t + r for t, r in zip(totals, result)]
        print("== lit", flush=True)
        result = run_lit(build_dir, os.path.join(tmp, "lit.xml"), args.kernel_cache)
        totals = [t + r for t, r in zip(totals, result)]

    if args.sanitizer_logs:
        totals[1] += count_sanitizer_reports(args.sanitizer_logs)

    passed, failed, skipped = totals
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
