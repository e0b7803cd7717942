"""One name, one thing: no two modules of ``sluiceway`` define a public class of the same name.

Two ``ProcessorSettings`` or two ``HttpAnswer`` make a reader (and an import line) guess which
one is meant. Classes are found by parsing the source, so nothing is imported.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "sluiceway"


def _public_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    ]


def _definitions() -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _public_classes(path):
            where[name].append(str(path.relative_to(PACKAGE)))
    return where


def test_the_scan_finds_the_classes() -> None:
    where = _definitions()
    assert where["FlowController"] == ["flowcontrol/controller.py"]
    assert where["FlowAnswer"] == ["flowcontrol/base.py"]
    assert len(where) > 100


def test_no_public_class_name_is_defined_twice() -> None:
    twice = {name: files for name, files in _definitions().items() if len(files) > 1}
    assert twice == {}
