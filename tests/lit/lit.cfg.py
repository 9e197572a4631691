# lit configuration for tir's golden IR tests.
import os

import lit.formats

config.name = "tir"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.environ.get("TEST_TMPDIR", "/tmp")
config.excludes = ["lit.cfg.py"]

tools = os.environ["TIR_LIT_TOOLS"]  # tir-opt, FileCheck and not, set by run_lit.py
config.environment["PATH"] = tools + os.pathsep + config.environment.get("PATH", "/usr/bin:/bin")
