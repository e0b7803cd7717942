"""Every package carries its file map: the docstring of its ``__init__.py`` names each module and
each direct subpackage, with a few words on what it is (docs/architecture.md, "Layout as built").

A reader who opens a package learns where things are before opening a file, and a module added
without a line in its package's map fails here rather than in review. A name counts only when it
stands alone in double backticks (``resume``, or ``resume.py`` / ``lua/``), so ``resume_token``
or the word in running text does not hide a missing entry. Docstrings are read with ``ast``, so
nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "sluiceway"
NOT_LISTED = frozenset({"__init__", "__main__"})


def _packages() -> list[Path]:
    return sorted(
        init.parent for init in PACKAGE.rglob("__init__.py") if "__pycache__" not in init.parts
    )


def _contents(package: Path) -> list[str]:
    """The names a package's map must hold: its modules' stems and its direct subpackages."""
    modules = [path.stem for path in package.glob("*.py") if path.stem not in NOT_LISTED]
    subpackages = [path.name for path in package.iterdir() if (path / "__init__.py").is_file()]
    return sorted(modules + subpackages)


def _docstring(package: Path) -> str:
    init = package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"), filename=str(init))
    return ast.get_docstring(tree) or ""


def missing_from_map(docstring: str, names: Iterable[str]) -> list[str]:
    """The names ``docstring`` does not hold in double backticks (alone, or with ``.py``, ``/``)."""
    return [
        name for name in names if re.search(rf"``{re.escape(name)}(?:\.py|/)?``", docstring) is None
    ]


def test_the_scan_sees_every_package_and_its_files() -> None:
    packages = [package.relative_to(PACKAGE).as_posix() for package in _packages()]
    assert {".", "broker", "broker/lua", "flowcontrol/usage", "bench/isolation"} <= set(packages)
    processor = _contents(PACKAGE / "processor")
    assert {"resume", "work_item", "ingest"} <= set(processor)
    assert "__init__" not in processor
    root = _contents(PACKAGE)
    assert {"flowcontrol", "cli", "wire"} <= set(root)
    assert "__main__" not in root
    assert _contents(PACKAGE / "broker" / "lua") == []


def test_the_check_catches_a_missing_name() -> None:
    docstring = (
        "- ``ingest.py``: decode; ``resume``: prefix resume; ``lua/``: the scripts;\n"
        "- ``work_items`` is another name, and retry in prose is not a listing."
    )
    names = ["ingest", "lua", "resume", "retry", "work_item"]
    assert missing_from_map(docstring, names) == ["retry", "work_item"]


def test_every_package_docstring_lists_its_files() -> None:
    missing = {
        package.relative_to(PACKAGE).as_posix(): absent
        for package in _packages()
        if (absent := missing_from_map(_docstring(package), _contents(package)))
    }
    report = "\n".join(f"{package}: {', '.join(names)}" for package, names in missing.items())
    assert missing == {}, f"package docstrings that do not name these files:\n{report}"
