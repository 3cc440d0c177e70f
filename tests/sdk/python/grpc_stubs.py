"""Python gRPC stubs generated at test time from the repository's .proto files,
so that the tests speak exactly the protocol the server was built from."""

import importlib
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

from gyre_server import REPO_ROOT


def generate(proto):
    """The modules NAME_pb2 and NAME_pb2_grpc for proto (a path relative to the
    repository root, e.g. "server/grpcapi/apipb/api.proto"), generated into a
    temporary directory by grpc_tools.protoc."""
    path = REPO_ROOT / proto
    name = path.stem
    out = Path(tempfile.mkdtemp(prefix=f"gyre-{name}-stubs-"))
    include = Path(protoc.__file__).parent / "_proto"
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{path.parent}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            str(path),
        ]
    )
    assert rc == 0, f"protoc failed on {proto} with {rc}"
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(f"{name}_pb2"), importlib.import_module(f"{name}_pb2_grpc")
    finally:
        sys.path.remove(str(out))
