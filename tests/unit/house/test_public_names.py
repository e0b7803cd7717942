"""One name, one thing: no two modules of ``sluiceway`` define a public class, or a public
module-level function, of the same name.

Two ``ProcessorSettings``, two ``HttpAnswer`` or two ``read_body`` make a reader (and an import
line) guess which one is meant. Names are found by parsing the source, so nothing is imported.
A name shared on purpose, as a convention every module of a kind follows, is listed in
``CONVENTIONS`` with the modules that follow it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "sluiceway"


def _classes(tree: ast.Module) -> list[str]:
    """Every class, nested ones too."""
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def _functions(tree: ast.Module) -> list[str]:
    """Module-level functions only (methods belong to their class)."""
    kinds = ast.FunctionDef | ast.AsyncFunctionDef
    return [node.name for node in tree.body if isinstance(node, kinds)]


def _definitions(names: Callable[[ast.Module], list[str]] = _classes) -> dict[str, list[str]]:
    """Public name -> the modules (relative paths) that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in names(tree):
            if not name.startswith("_"):
                where[name].append(str(path.relative_to(PACKAGE)))
    return where


def test_the_scan_finds_the_classes() -> None:
    where = _definitions()
    assert where["FlowController"] == ["flowcontrol/controller.py"]
    assert where["DropStatus"] == ["flowcontrol/base.py"]
    assert len(where) > 100


def test_no_public_class_name_is_defined_twice() -> None:
    twice = {name: files for name, files in _definitions().items() if len(files) > 1}
    assert twice == {}


# Shared on purpose: each gate module's builder, each command module's registration.
CONVENTIONS = {
    "build": lambda path: path.startswith("gates/"),
    "register": lambda path: (
        path.endswith("command.py") or path in ("cli_requests.py", "status.py")
    ),
}


def test_the_scan_finds_the_functions() -> None:
    where = _definitions(_functions)
    assert where["build_gate"] == ["gates/factory.py"]
    assert len(where["build"]) > 10 and len(where) > 200


def test_no_public_function_name_is_defined_twice_except_by_convention() -> None:
    twice = {
        name: [f for f in files if not (name in CONVENTIONS and CONVENTIONS[name](f))]
        for name, files in _definitions(_functions).items()
        if len(files) > 1
    }
    assert {name: files for name, files in twice.items() if files} == {}
