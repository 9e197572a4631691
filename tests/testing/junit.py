"""Test results a script reports to Bazel as JUnit XML ($XML_OUTPUT_FILE),
so that what it skipped is counted as skipped (tools/test), never as passed.

    results = junit.Results("tir_torch_test")
    results.check("a name", ok, detail)      # a failed check makes exit() fail
    results.skip("a name", "why")            # printed and recorded as skipped
    sys.exit(results.exit())                 # writes the XML; 1 if any failed

Without $XML_OUTPUT_FILE (run by hand) it only prints.
"""

import os
import xml.etree.ElementTree as ET


class Results:
    def __init__(self, suite):
        self.suite = suite
        self.cases = []  # (name, "passed" | "failed" | "skipped", detail)

    def check(self, name, ok, detail=""):
        self.cases.append((name, "passed" if ok else "failed", detail))
        print(("ok      " if ok else "FAILED  ") + name + ("" if ok or not detail else ": " + str(detail)))
        return ok

    def skip(self, name, why):
        self.cases.append((name, "skipped", why))
        print("skipped " + name + ": " + why)

    @property
    def failures(self):
        return [n for n, state, _ in self.cases if state == "failed"]

    def write(self):
        path = os.environ.get("XML_OUTPUT_FILE")
        if not path:
            return
        suites = ET.Element("testsuites")
        suite = ET.SubElement(suites, "testsuite", name=self.suite, tests=str(len(self.cases)),
                              failures=str(len(self.failures)),
                              skipped=str(sum(1 for _, s, _ in self.cases if s == "skipped")))
        for name, state, detail in self.cases:
            case = ET.SubElement(suite, "testcase", name=name, classname=self.suite)
            if state == "failed":
                ET.SubElement(case, "failure", message=str(detail)[:2000])
            elif state == "skipped":
                ET.SubElement(case, "skipped", message=str(detail)[:2000])
        ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)

    def exit(self):
        """Writes the XML; the exit status (1 when a check failed)."""
        self.write()
        return 1 if self.failures else 0
