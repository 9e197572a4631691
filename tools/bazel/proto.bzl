"""C++ code generation for tir's .proto files with the system protoc.

Bazel's native proto rules want protobuf's sources; here the Debian `protoc`
and `grpc_cpp_plugin` (the versions the linked libraries were built with) run
in a genrule and the outputs are wrapped in a cc_library.
"""

def tir_cc_proto_library(name, srcs, deps = [], proto_deps = [], grpc = False, visibility = None):
    """Generates C++ (and optionally gRPC) code for `srcs`.

    Args:
      name: the cc_library to create.
      srcs: .proto files of this package, relative to it (e.g. "tir/v1/graph.proto").
      deps: tir_cc_proto_library targets whose messages `srcs` import.
      proto_deps: the .proto files of `deps` (filegroups), given to protoc.
      grpc: also run grpc_cpp_plugin for the services in `srcs`.
      visibility: of the cc_library.
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    plugin = ""
    if grpc:
        plugin = (" --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin)" +
                  " --grpc_out=$(RULEDIR)")
    native.genrule(
        name = name + "_gen",
        srcs = srcs + proto_deps,
        outs = outs,
        visibility = visibility,
        cmd = ("protoc -I" + native.package_name() +
               " --cpp_out=$(RULEDIR)" + plugin +
               " " + " ".join(["$(location %s)" % s for s in srcs])),
    )
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs + proto_deps,
        visibility = visibility,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        includes = ["."],
        deps = deps + ["@system//:protobuf"] + (["@system//:grpc"] if grpc else []),
        visibility = visibility,
    )
