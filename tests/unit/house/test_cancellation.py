"""No code signals an outcome by cancelling a task and un-cancelling it (docs/design-rules.md
15c): waits that others cut short run in cancel scopes."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "sluiceway"


def test_nothing_uncancels_a_task() -> None:
    found = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if ".uncancel(" in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_the_scan_sees_source_files() -> None:
    assert any(PACKAGE.rglob("exchange.py"))
