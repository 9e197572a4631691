#!/usr/bin/env python3
"""Writes a multi-kernel graph's wiring for run.py, from a tir.v1.KernelBundle.

`tirctl emit` writes each kernel's launch contract but not which graph
tensor each kernel argument is. A bundle (`tirctl compile --heuristic-now`)
has that: per kernel, in launch order, the bundle tensors its arguments and
results are (graph INPUT, graph OUTPUT or INTERMEDIATE, by index), and the
intermediates' types. The partition is the same for every candidate, so one
wiring serves all of a graph's emitted candidates.

Usage (prepare.sh, where protoc and python3's protobuf are):
  wiring.py PB_MODULE_DIR BUNDLE.pb OUT.json
PB_MODULE_DIR holds the Python modules protoc generated from proto/.
"""
import json
import sys

def main():
    mod_dir, bundle_path, out_path = sys.argv[1:4]
    sys.path.insert(0, mod_dir)
    from google.protobuf import json_format
    from tir.v1 import kernel_pb2

    bundle = kernel_pb2.KernelBundle()
    bundle.ParseFromString(open(bundle_path, "rb").read())
    d = json_format.MessageToDict(bundle, preserving_proto_field_name=True, use_integers_for_enums=False)

    def ref(r):
        return [r.get("kind", "KIND_UNSPECIFIED"), int(r.get("index", 0))]

    def ttype(t):
        # DTYPE_BF16 -> bf16: launch.json's names (DTypeName) are the enum's, lower case.
        return {"dtype": t.get("dtype", "DTYPE_UNSPECIFIED").split("_", 1)[1].lower(),
                "shape": [int(s) for s in t.get("shape", [])]}

    wiring = {
        "kernels": [{"partition": int(k.get("partition", 0)), "inputs": [ref(r) for r in k.get("kernel_inputs", [])],
                     "outputs": [ref(r) for r in k.get("kernel_outputs", [])]} for k in d.get("kernels", [])],
        "intermediates": [ttype(t) for t in d.get("intermediates", [])],
        "inputs": [ttype(t) for t in d.get("inputs", [])],
        "outputs": [ttype(t) for t in d.get("outputs", [])],
    }
    for k in wiring["kernels"]:
        for r in k["inputs"] + k["outputs"]:
            if r[0] not in ("INPUT", "OUTPUT", "INTERMEDIATE"):
                sys.exit(f"wiring.py: {bundle_path}: kernel {k['partition']} has a {r[0]} argument")
    json.dump(wiring, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
