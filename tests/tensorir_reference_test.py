"""Checks tir against NVIDIA TensorIR's published test inputs.

The inputs live outside the repository, in $TIR_REFERENCE_DIR/tensor-ir (set
by tools/test to ../shared/reference); without them the test reports itself
skipped (tests/testing/junit.py), which tools/test counts as a skip.

1. ops, types, shape-merge, layout_attr: each file's RUN modes (print,
   print | re-parse, generic print | re-parse) are run through tir-opt and the
   file's own CHECK lines, with `nv_tensor_ir.` read as `tir.`, must match.
   Printing is a fixed point: re-parsing the output prints it again unchanged;
   the generic form spelled in TensorIR's namespace parses to the same IR.
2. canonicalize: parses and round-trips (its CHECKs describe TensorIR's
   canonicalization patterns, which are not part of this check).
3. invalid, matmul-invalid, reduce-invalid, pow-invalid: every case (split at
   `// -----`) with an expected-error is rejected; every other case accepted.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing"))
import junit  # noqa: E402

FILECHECK = "/usr/lib/llvm-16/bin/FileCheck"


def run(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True)


def main():
    tir_opt = os.path.abspath("compiler/tools/tir-opt")
    ref = os.environ.get("TIR_REFERENCE_DIR", "")
    tdir = os.path.join(ref, "tensor-ir")
    results = junit.Results("tensorir_reference_test")
    if not ref or not os.path.isdir(tdir):
        # Reported as skipped (tools/test counts it so), never as passed.
        results.skip("TensorIR's own test files", "not found (TIR_REFERENCE_DIR=%r)" % ref)
        return results.exit()
    failures = []
    checked = 0

    for name in ["ops", "types", "shape-merge", "layout_attr", "canonicalize"]:
        path = os.path.join(tdir, name + ".mlir")
        text = open(path).read()
        split = ["--split-input-file"] if "split-input-file" in text else []
        printed = run([tir_opt] + split + [path])
        if printed.returncode != 0:
            failures.append("%s: does not parse: %s" % (name, printed.stderr[:2000]))
            continue
        again = run([tir_opt] + split + ["-"], printed.stdout)
        if again.returncode != 0 or again.stdout != printed.stdout:
            failures.append("%s: printing is not a fixed point" % name)
        generic = run([tir_opt] + split + ["--mlir-print-op-generic", path])
        from_generic = run([tir_opt] + split + ["-"], generic.stdout)
        if generic.returncode != 0 or from_generic.returncode != 0 or from_generic.stdout != printed.stdout:
            failures.append("%s: generic form does not round-trip: %s" % (name, from_generic.stderr[:2000]))
        # TensorIR's own generic form: tir's generic output in its namespace.
        foreign = (generic.stdout.replace('"tir.', '"nv_tensor_ir.').replace("#tir.", "#nv_tensor_ir.")
                   .replace(" tir.stride", " nv_tensor_ir.stride"))
        from_foreign = run([tir_opt] + split + ["-"], foreign)
        if from_foreign.returncode != 0 or from_foreign.stdout != printed.stdout:
            failures.append("%s: TensorIR's generic form does not parse to the same IR: %s"
                            % (name, from_foreign.stderr[:2000]))
        checked += 1
        if name == "canonicalize":
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(text.replace("nv_tensor_ir.", "tir."))
            checks = f.name
        for mode, output in [("print", printed.stdout), ("re-parse", again.stdout),
                             ("generic", from_generic.stdout)]:
            fc = run([FILECHECK, checks], output)
            if fc.returncode != 0:
                failures.append("%s (%s): CHECK lines do not match:\n%s" % (name, mode, fc.stderr[:3000]))
        os.unlink(checks)

    for name in ["invalid", "matmul-invalid", "reduce-invalid", "pow-invalid"]:
        text = open(os.path.join(tdir, name + ".mlir")).read()
        for i, case in enumerate(re.split(r"(?m)^// -----\s*$", text)):
            expect_error = "expected-error" in case
            p = run([tir_opt, "-"], case)
            rejected = p.returncode != 0
            checked += 1
            if rejected != expect_error:
                failures.append("%s case %d: %s" % (
                    name, i, "accepted but TensorIR rejects it" if expect_error
                    else "rejected: " + p.stderr.strip()[:500]))
            elif rejected and "error:" not in p.stderr:
                failures.append("%s case %d: rejected without a diagnostic" % (name, i))

    print("checked %d files/cases" % checked)
    for f in failures:
        print("FAIL:", f)
    results.check("TensorIR's test files (%d files/cases)" % checked, checked > 0 and not failures,
                  "; ".join(failures)[:2000])
    return results.exit()


if __name__ == "__main__":
    sys.exit(main())
