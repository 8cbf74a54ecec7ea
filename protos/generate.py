"""Regenerate tfrec/proto/*_pb2.py(i) from protos/tfrec/proto/*.proto.

Run from anywhere: ``python protos/generate.py`` (writes the modules) or
``python protos/generate.py --check`` (exit 1 when the committed modules are
stale). Needs ``grpcio-tools==1.51.3``: its protoc 3.21.6 makes gencode that
imports on every protobuf runtime from 4.21.6 (tfrec's lower bound) to 7.x, and
that TensorFlow and apache-beam environments both accept.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
import warnings
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
GRPCIO_TOOLS_VERSION = "1.51.3"  # bundles protoc 3.21.6
OUTPUTS = ["feature_pb2.py", "feature_pb2.pyi", "example_pb2.py", "example_pb2.pyi"]


def generate(out_dir: Path) -> None:
    """Compile every proto under protos/ into ``out_dir``/tfrec/proto."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grpcio-tools 1.51 imports the deprecated pkg_resources
        from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    args = ["protoc", f"-I{PROTO_ROOT}", f"--python_out={out_dir}", f"--pyi_out={out_dir}", *protos]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def grpcio_tools_version() -> str | None:
    try:
        return metadata.version("grpcio-tools")
    except metadata.PackageNotFoundError:
        return None


def stale_files() -> list[str]:
    """Names of committed generated files that differ from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        fresh = Path(tmp) / "tfrec" / "proto"
        committed = ROOT / "tfrec" / "proto"
        return [
            name
            for name in OUTPUTS
            if not (committed / name).exists()
            or not filecmp.cmp(fresh / name, committed / name, shallow=False)
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale generated modules")
    args = parser.parse_args(argv)
    found = grpcio_tools_version()
    if found != GRPCIO_TOOLS_VERSION:
        print(f"need grpcio-tools=={GRPCIO_TOOLS_VERSION}, found {found}")
        return 2
    if args.check:
        stale = stale_files()
        for name in stale:
            print(f"stale: tfrec/proto/{name} (run python protos/generate.py)")
        return 1 if stale else 0
    generate(ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
