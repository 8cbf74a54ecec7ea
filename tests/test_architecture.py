"""Imports flow downward through the layers, and `import tfrec` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tfrec"

# Lowest layer first; a module may import its own layer and the ones before it.
LAYERS = ["errors", "record", "proto", "example", "features", "data", "cli", "convert", "integrations"]
# Third-party packages a layer must never import.
FORBIDDEN = {"record": {"google.protobuf"}}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "tfrec" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LAYERS else None


def _imports(path: Path) -> list[str]:
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append(name)
            found += [f"{name}.{alias.name}" for alias in node.names]
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if not p.name.endswith("_pb2.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    own = _layer(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    if own is None:
        return  # tfrec/__init__.py and other top-level modules may import any layer
    rank = LAYERS.index(own)
    for name in _imports(path):
        target = _layer(name)
        assert target is None or LAYERS.index(target) <= rank, f"{path.name}: layer {own} imports {name}"
        for forbidden in FORBIDDEN.get(own, ()):
            assert not name.startswith(forbidden), f"{path.name}: layer {own} imports {name}"


def test_import_tfrec_loads_no_optional_package() -> None:
    code = (
        "import sys, tfrec\n"
        "heavy = {'tensorflow', 'torch', 'PIL', 'fsspec', 'tqdm', 'google_crc32c', 'crcmod', 'grpc_tools'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
