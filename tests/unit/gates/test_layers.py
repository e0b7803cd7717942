"""gates/ depends on the broker only through protocols: no module of the package imports
``sluiceway.broker`` (the Redis and SQLite stores live there and are handed in)."""

from __future__ import annotations

import ast
from pathlib import Path

import sluiceway.gates

PACKAGE = Path(sluiceway.gates.__file__).parent


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_gate_module_imports_the_broker() -> None:
    offenders = {
        path.name: sorted(m for m in _imports(path) if m.startswith("sluiceway.broker"))
        for path in PACKAGE.glob("*.py")
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}
