"""Bazel rules for projects that use tir.

Load them from a checkout of tir (`local_repository(name = "tir", path = ...)`):

    load("@tir//client/bazel:tir.bzl", "tir_compile_test", "tir_tune_test")

    tir_compile_test(name = "mlp_compiles", graph = "mlp.mlir", archs = ["sm_90a", "sm_80", "host"])
    tir_tune_test(name = "mlp_tunes", graph = "mlp.mlir", arch = "host", budget = 4)
"""

_TIRCTL = Label("//client:tirctl")
_RUNNER = Label("//worker/runner:tir-worker-runner")
_SCRIPT = Label("//client/bazel:tir_rule_test.sh")

def tir_compile_test(name, graph, archs = ["sm_90a", "host"], **kwargs):
    """The graph verifies, plans and compiles for every arch in `archs`.

    GPU archs compile to cubins with NVRTC (no GPU needed); `host` also runs
    every kernel on the CPU against the reference interpreter.

    Args:
      name: the test.
      graph: a .mlir file (tir or TensorIR text form).
      archs: target archs.
      **kwargs: passed to sh_test (size, tags, ...).
    """
    native.sh_test(
        name = name,
        srcs = [_SCRIPT],
        args = ["compile", "$(rootpath %s)" % _TIRCTL, "$(rootpath %s)" % _RUNNER, "$(rootpath %s)" % graph] + archs,
        data = [graph, _TIRCTL, _RUNNER],
        **kwargs
    )

def tir_tune_test(name, graph, arch = "host", budget = 4, **kwargs):
    """The graph is tuned end to end through tirctl's local service (the test's own).

    The bundle must be tuned with every kernel verified against the
    reference, and the repeat must be a cache hit returning the same bundle.
    On machines without a GPU, use arch = "host".

    Args:
      name: the test.
      graph: a .mlir file.
      arch: target arch of the tuning ("host" in CI).
      budget: candidates measured per kernel in the first round.
      **kwargs: passed to sh_test.
    """
    kwargs.setdefault("size", "large")
    native.sh_test(
        name = name,
        srcs = [_SCRIPT],
        args = ["tune", "$(rootpath %s)" % _TIRCTL, "$(rootpath %s)" % _RUNNER, "$(rootpath %s)" % graph, arch, str(budget)],
        data = [graph, _TIRCTL, _RUNNER],
        **kwargs
    )
