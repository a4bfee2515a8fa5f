"""The package's layers depend one way: each imports only the layers below it."""

from __future__ import annotations

import ast
from pathlib import Path

import agent_memory

ROOT = Path(agent_memory.__file__).parent

# Lowest first. A package may import itself and anything listed before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_version", "errors"),
    ("core", "telemetry", "embedded"),
    ("schema", "embedders", "cache"),  # stored form of a memory; embedders; cache tiers
    ("search",),  # the FT dialect over the stored form
    ("backends",),  # where a KNN runs: FT, client-side mirror, in-process keyspace
    ("store",),  # the memory store's operations and its public class
    ("tool", "integrations", "facade"),
    ("cli", "__init__"),
)
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found |= {n.split(".")[1] for n in names if n.startswith("agent_memory.")}
    return found


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in ROOT.glob("*.py")}
    assert packages | modules <= set(RANK), (packages | modules) - set(RANK)


def test_no_package_imports_one_above_it() -> None:
    upward = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        package = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for target in _imports(path) - {package}:
            if RANK[target] > RANK[package]:
                upward.append(f"{rel} imports agent_memory.{target}")
    assert upward == []
