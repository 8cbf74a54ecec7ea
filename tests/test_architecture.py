"""Imports follow the layers of ../shared/DESIGN.md, no import circle exists anywhere, modules share
no underscore names, and `import tfrec` stays light.

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tfrec"

# The layers a layer may import (besides itself and the base modules), or single modules of a layer
# ("integrations.arrow"). Each edge is DESIGN.md's: `record` knows no protobuf and `example` never
# touches files, so neither imports the other; `features` hands flat numpy to `example` and never
# builds protos; `convert` and the engine integrations build on `data`; `convert` may use the one
# Arrow mapping (tfrec.integrations.arrow: Parquet export types its columns with it) but not torch,
# Ray or Dask, and no integration imports `convert`, so there is no circle; `cli` may call converters.
BASE = {"errors", "arguments", "cache", "allocator", "forking"}  # modules every layer may import
BELOW_DATA = {"record", "example", "features"}
ALLOWED: dict[str, set[str]] = {
    "record": set(),
    "proto": set(),
    "example": {"proto"},
    "features": {"record", "example"},
    "data": BELOW_DATA,
    "convert": BELOW_DATA | {"data", "integrations.arrow"},
    "integrations": BELOW_DATA | {"data"},
    "cli": BELOW_DATA | {"data", "convert"},
}
# tfrec/integrations/ and its names tfrec.torch, tfrec.ray and tfrec.dask
INTEGRATIONS = {"integrations", "torch", "ray", "dask"}
# Third-party packages a layer must never import.
FORBIDDEN = {"record": {"google.protobuf"}, "features": {"google.protobuf"}}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for p in sorted(PACKAGE.rglob("*.py"))
        if not p.name.endswith("_pb2.py") and "__pycache__" not in p.parts
    }


MODULES = _modules()


def _layer(module: str) -> str | None:
    """The layer of a tfrec module; None for the package itself, __main__ and the base modules."""
    parts = module.split(".")
    if parts[0] != "tfrec" or len(parts) < 2 or parts[1] in BASE or parts[1] == "__main__":
        return None
    return "integrations" if parts[1] in INTEGRATIONS else parts[1]


def _imports(path: Path) -> Iterator[tuple[str, str, int]]:
    """``(module, imported name or "", line)`` for every import in ``path``; module names absolute."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:
                yield name, alias.name, node.lineno


def _target(module: str, name: str) -> str:
    """The module an import reaches: ``from pkg import sub`` reaches the submodule ``pkg.sub``."""
    return f"{module}.{name}" if f"{module}.{name}" in MODULES else module


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for module, imported, _ in _imports(path):
            target = _target(module, imported) if imported else module
            if target in MODULES and target != name:
                graph[name].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("name", sorted(MODULES), ids=str)
def test_module_imports_only_the_layers_below_it(name: str) -> None:
    own = _layer(name)
    if own is None:
        return  # tfrec/__init__.py, __main__ and the base modules
    assert own in ALLOWED, f"{name}: layer {own} is not in DESIGN.md's order; add it to ALLOWED"
    for module, imported, line in _imports(MODULES[name]):
        reached = _target(module, imported) if imported else module
        target = _layer(reached)
        allowed = (
            target is None
            or target == own
            or target in ALLOWED[own]
            or reached.removeprefix("tfrec.") in ALLOWED[own]
        )
        assert allowed, f"{name}:{line}: layer {own} imports {module} (layer {target})"
        for forbidden in FORBIDDEN.get(own, ()):
            assert not module.startswith(forbidden), f"{name}:{line}: layer {own} imports {module}"


def test_no_import_circle_anywhere() -> None:
    assert _circles(_graph()) == []


def test_the_circle_finder_sees_a_circle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(MODULES), ids=str)
def test_modules_share_no_underscore_names(name: str) -> None:
    """A name another module uses is that module's interface, so it has no leading underscore."""
    tree = ast.parse(MODULES[name].read_text())
    modules_bound: set[str] = set()  # local names bound to tfrec modules
    for module, imported, line in _imports(MODULES[name]):
        if not module.startswith("tfrec"):
            continue
        assert not imported.startswith("_") or imported == "__version__", f"{name}:{line}: imports {imported}"
        if imported and _target(module, imported) in MODULES:
            modules_bound.add(imported)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is None:
            continue
        if isinstance(node, ast.alias) and node.asname and node.name in modules_bound:
            modules_bound.add(node.asname)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules_bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            raise AssertionError(f"{name}:{node.lineno}: uses {node.value.id}.{node.attr}")


def test_import_tfrec_loads_no_optional_package() -> None:
    code = (
        "import sys, tfrec\n"
        "heavy = {'tensorflow', 'torch', 'PIL', 'fsspec', 'tqdm', 'google_crc32c', 'crcmod', 'grpc_tools',\n"
        "         'ray', 'dask', 'pyarrow', 'grain'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
