from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from sluiceway.config.objectives import load_objectives
from sluiceway.errors import ConfigError
from sluiceway.router.objective_files import (
    apply_objectives,
    load_objective_path,
    watch_objective_path,
)
from sluiceway.router.objectives import ObjectiveTable, select_for_pool

GUIDE = Path(__file__).parents[2] / "fixtures" / "guide" / "inferenceobjectives.yaml"


def _doc(name: str, prio: int, pool: str = "p") -> str:
    return (
        f"apiVersion: llm-d.ai/v1alpha2\nkind: InferenceObjective\nmetadata: {{name: {name}}}\n"
        f"spec: {{priority: {prio}, poolRef: {{name: {pool}}}}}\n"
    )


def test_table_lookup_and_changes() -> None:
    seen: list[frozenset[int]] = []
    table = ObjectiveTable(seen.append)
    table.replace(load_objectives([]).value)
    assert table.priority_of("x") == 0 and table.priority_of(None) == 0
    (obj,) = load_objectives(
        [
            {
                "apiVersion": "llm-d.ai/v1alpha2",
                "kind": "InferenceObjective",
                "metadata": {"name": "x"},
                "spec": {"priority": -5},
            }
        ]
    ).value
    table.upsert(obj)
    assert table.priority_of("x") == -5 and table.known("x")
    table.remove("x")
    table.remove("x")
    assert seen == [frozenset(), frozenset({-5}), frozenset()]


def test_pool_filter_and_selector_notes() -> None:
    docs = [
        {
            "apiVersion": "llm-d.ai/v1alpha2",
            "kind": "InferenceObjective",
            "metadata": {"name": "mine"},
            "spec": {"priority": 1, "poolRef": {"name": "p"}},
        },
        {
            "apiVersion": "llm-d.ai/v1alpha2",
            "kind": "InferenceObjective",
            "metadata": {"name": "theirs"},
            "spec": {"priority": 2, "poolRef": {"name": "q"}},
        },
        {
            "apiVersion": "llm-d.ai/v1",
            "kind": "InferenceObjective",
            "metadata": {"name": "everywhere"},
            "spec": {"priority": 3, "poolSelector": {"matchLabels": {"a": "b"}}},
        },
    ]
    objectives = load_objectives(docs).value
    sel = select_for_pool(objectives, "p")
    assert [o.name for o in sel.kept] == ["mine", "everywhere"]
    notes = sel.notes("p")
    assert "theirs" in notes[0] and "everywhere" in notes[1]
    assert len(select_for_pool(objectives, None).kept) == 3


def test_guide_objectives_file() -> None:
    table = ObjectiveTable()
    _, notes = apply_objectives(GUIDE, table, "llm-d-router")
    assert table.priority_of("reserved-interactive") == 100
    assert table.priority_of("overflow-batch") == -10
    assert notes == []


def test_directory_and_errors(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(_doc("a", 1))
    (tmp_path / "b.yml").write_text(_doc("b", 2))
    (tmp_path / "ignored.txt").write_text("junk")
    objectives, _ = load_objective_path(tmp_path)
    assert sorted(o.name for o in objectives) == ["a", "b"]
    with pytest.raises(ConfigError, match="does not exist"):
        load_objective_path(tmp_path / "missing")
    (tmp_path / "c.yaml").write_text(_doc("a", 3))
    with pytest.raises(ConfigError, match="duplicate"):
        load_objective_path(tmp_path)


async def test_directory_reload_on_change_keeps_old_set_on_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(_doc("a", 1))
    table = ObjectiveTable()
    apply_objectives(tmp_path, table, "p")
    reloads: list[list[str]] = []
    stop = asyncio.Event()
    watch = asyncio.create_task(
        watch_objective_path(
            tmp_path, table, "p", stop=stop, on_reload=reloads.append, debounce_ms=20
        )
    )
    try:
        # The watcher registers with the kernel some time after it starts: write until seen.
        await _until(
            lambda: table.priority_of("a") == 7,
            touch=lambda: (tmp_path / "a.yaml").write_text(_doc("a", 7)),
        )
        (tmp_path / "b.yaml").write_text("{broken: [")
        (tmp_path / "c.yaml").write_text(_doc("c", 9))
        (tmp_path / "b.yaml").write_text(_doc("b", 4, pool="other"))
        await _until(lambda: table.priority_of("c") == 9)
        assert not table.known("b")
        assert any("ignored: b" in n for notes in reloads for n in notes)
    finally:
        stop.set()
        await asyncio.wait_for(watch, 5)


async def _until(cond: Callable[[], bool], touch: Callable[[], object] | None = None) -> None:
    for i in range(1000):
        if cond():
            return
        if touch is not None and i % 10 == 0:
            touch()
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")
