"""The `tir` Python package: pip install ./client/python (from the checkout).

The protobuf and gRPC modules (tir.v1) are generated at build time from
proto/tir/v1 with Debian's protoc and grpc_python_plugin, which match
python3-protobuf and python3-grpcio. Offline, without build isolation:

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index ./client/python
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROTOS = ["error", "graph", "kernel", "compiler_service", "local_service"]


class BuildWithProtos(build_py):
    """build_py, plus tir/v1/*_pb2*.py generated into the build tree and
    tir/_installed_from.py naming the checkout (where the local service's
    tirctl is found when it is not on PATH)."""

    def run(self):
        super().run()
        proto_root = os.path.join(CHECKOUT, "proto")
        out = os.path.join(self.build_lib)
        protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
        if not protoc or not plugin:
            raise SystemExit("tir: protoc and grpc_python_plugin are needed (Debian: protobuf-compiler, "
                             "protobuf-compiler-grpc; tools/setup installs them)")
        os.makedirs(os.path.join(out, "tir", "v1"), exist_ok=True)
        subprocess.check_call([protoc, "-I" + proto_root, "--python_out=" + out,
                               "--plugin=protoc-gen-grpc_python=" + plugin, "--grpc_python_out=" + out] +
                              [os.path.join(proto_root, "tir", "v1", p + ".proto") for p in PROTOS])
        with open(os.path.join(out, "tir", "v1", "__init__.py"), "w"):
            pass
        with open(os.path.join(out, "tir", "_installed_from.py"), "w") as f:
            f.write("CHECKOUT = %r\n" % CHECKOUT)


setup(
    name="tir",
    version="0.1.0",
    description="Client, bundle runner and PyTorch integration of the tir compile-and-autotune service",
    packages=["tir"],
    package_dir={"tir": "tir"},
    python_requires=">=3.9",
    install_requires=["grpcio", "protobuf"],
    extras_require={"torch": ["torch"], "numpy": ["numpy"]},
    cmdclass={"build_py": BuildWithProtos},
    # torch.compile(model, backend="tir") finds the backend by this name.
    entry_points={"torch_dynamo_backends": ["tir = tir.backend:dynamo_backend"]},
)
