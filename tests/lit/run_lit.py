"""Runs the lit suite under Bazel: every .mlir file here is a test.

Fails if lit discovers fewer tests than there are .mlir files (a test left
out by accident), or if any test fails.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

LLVM_BIN = "/usr/lib/llvm-16/bin"
LIT = "/usr/lib/llvm-16/build/utils/lit/lit.py"


def find(rel, fallback=None):
    for base in (os.getcwd(), os.path.join(os.getcwd(), "external")):
        path = os.path.join(base, rel)
        if os.path.exists(path):
            return os.path.abspath(path)
    if fallback and os.path.exists(fallback):
        return fallback
    sys.exit("cannot find " + rel)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    suite = os.path.join(os.getcwd(), "tests", "lit")
    if not os.path.isdir(suite):
        suite = here
    tools = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    os.symlink(find("compiler/tools/tir-opt"), os.path.join(tools, "tir-opt"))
    for tool in ("FileCheck", "not", "split-file"):
        os.symlink(find("llvm/bin/" + tool, os.path.join(LLVM_BIN, tool)), os.path.join(tools, tool))
    env = dict(os.environ, TIR_LIT_TOOLS=tools)
    files = sorted(glob.glob(os.path.join(suite, "**", "*.mlir"), recursive=True))
    proc = subprocess.run([sys.executable, LIT, "-v", suite], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout)
    shutil.rmtree(tools, ignore_errors=True)
    m = re.search(r"-- Testing: (\d+) tests?", proc.stdout)
    discovered = int(m.group(1)) if m else -1
    if discovered != len(files):
        sys.exit("lit discovered %d tests but there are %d .mlir files: %s"
                 % (discovered, len(files), files))
    if len(files) == 0:
        sys.exit("no lit tests found")
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
