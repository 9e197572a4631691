"""Runs Debian's mlir-tblgen on ODS files."""

def tir_tblgen(name, td_file, td_srcs = [], outs = {}):
    """Generates one file per entry of `outs` (output file -> mlir-tblgen flags).

    Args:
      name: a filegroup of every generated file.
      td_file: the .td file to run on.
      td_srcs: other .td files of this project it includes.
      outs: {"X.h.inc": "-gen-op-decls", ...}
    """
    for out, flags in outs.items():
        native.genrule(
            name = name + "_" + out.replace(".", "_"),
            srcs = [td_file] + td_srcs + ["@llvm//:mlir_td"],
            outs = [out],
            tools = ["@llvm//:mlir_tblgen"],
            cmd = ("$(location @llvm//:mlir_tblgen) %s -I external/llvm/include -I . " % flags +
                   "$(location %s) -o $@" % td_file),
        )
    native.filegroup(name = name, srcs = list(outs.keys()))
