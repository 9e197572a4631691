"""Counts a `bazel test` run for tools/test: passed, skipped and failed
targets, and the test cases skipped, printed as "passed skipped cases failed".

A target counts as skipped when every test case its test.xml records was
skipped (GoogleTest's GTEST_SKIP, or a script's own XML written through
tests/testing/junit.py); it counts as passed when it passed and ran at least
one case. Sharded targets have one test.xml per shard.

With --failures first, it prints instead, for each target that did not pass,
where its log says it failed (GoogleTest's "Failure" blocks, else the log's
last lines), so the end of a CI log names the cause.
"""

import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

SUMMARY = re.compile(r"^(//[^ ]+) +(?:\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY)")


def cases(xml_path):
    """(run, skipped) test cases of one test.xml."""
    try:
        root = ET.parse(xml_path).getroot()
    except (ET.ParseError, OSError):
        return 0, 0
    run = skipped = 0
    for case in root.iter("testcase"):
        if case.find("skipped") is not None or case.get("result") == "skipped" or case.get("status") == "notrun":
            skipped += 1
        else:
            run += 1
    return run, skipped


def failure_excerpt(log_path, limit=40):
    """The lines of one test.log that say why it failed."""
    try:
        with open(log_path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ["(no test.log)"]
    out = []
    for i, line in enumerate(lines):
        if line.endswith(": Failure") or "Assertion" in line or line.startswith("Traceback") or "FAIL:" in line:
            out.extend(lines[i:i + 8])
            out.append("--")
        if len(out) >= limit:
            break
    return out[:limit] if out else lines[-15:]


def failures(log, testlogs):
    with open(log, errors="replace") as f:
        for line in f:
            m = SUMMARY.match(line)
            if not m or m.group(2) == "PASSED":
                continue
            target = m.group(1)
            path = os.path.join(testlogs, target[2:].replace(":", "/"))
            logs = sorted(glob.glob(os.path.join(path, "test.log")) + glob.glob(os.path.join(path, "*", "test.log")))
            def failed_log(t):
                try:
                    with open(t, errors="replace") as f:
                        text = f.read()
                except OSError:
                    return False
                return ": Failure" in text or "FAILED" in text or "Traceback" in text

            logs = [t for t in logs if failed_log(t)] or logs
            for t in logs[:3]:
                print(f"tools/test: {target} {m.group(2)}: {os.path.relpath(t, testlogs)}")
                for l in failure_excerpt(t):
                    print("  " + l)


def main():
    if sys.argv[1] == "--failures":
        failures(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "bazel-testlogs")
        return
    log, testlogs = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "bazel-testlogs"
    passed = skipped = skipped_cases = failed = 0
    with open(log, errors="replace") as f:
        for line in f:
            m = SUMMARY.match(line)
            if not m:
                continue
            target, status = m.groups()
            if status != "PASSED":
                failed += 1
                continue
            path = os.path.join(testlogs, target[2:].replace(":", "/"))
            run = skip = 0
            for x in [os.path.join(path, "test.xml")] + glob.glob(os.path.join(path, "shard_*", "test.xml")):
                if os.path.exists(x):
                    r, s = cases(x)
                    run, skip = run + r, skip + s
            skipped_cases += skip
            if skip > 0 and run == 0:
                skipped += 1
            else:
                passed += 1
    print(passed, skipped, skipped_cases, failed)


if __name__ == "__main__":
    main()
