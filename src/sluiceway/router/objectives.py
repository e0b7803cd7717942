"""The objective table: InferenceObjective name -> priority, and which ones apply to this pool.

Objectives are looked up by name only (namespace ignored), as upstream; an unknown or missing
name means priority 0. With a pool name, objectives naming other pools are left out (and
reported); objectives with ``spec.poolSelector`` apply to every pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sluiceway.config.objectives import InferenceObjective

__all__ = ["ObjectiveTable", "Selection", "select_for_pool"]


@dataclass(frozen=True, slots=True)
class Selection:
    """``kept``: objectives that apply; ``other_pools``: names left out; ``selectors``: names
    kept because they select pools by label (we cannot evaluate a selector)."""

    kept: tuple[InferenceObjective, ...]
    other_pools: tuple[str, ...] = ()
    selectors: tuple[str, ...] = ()

    def notes(self, pool: str | None) -> list[str]:
        """Start-up and reload notes for the operator."""
        out: list[str] = []
        if self.other_pools:
            out.append(
                f"objectives for other pools than {pool!r} ignored: {', '.join(self.other_pools)}"
            )
        if self.selectors:
            out.append(
                "objectives with spec.poolSelector apply to every pool: "
                + ", ".join(self.selectors)
            )
        return out


def select_for_pool(objectives: Iterable[InferenceObjective], pool: str | None) -> Selection:
    """Keep the objectives that apply to ``pool`` (None: all)."""
    kept: list[InferenceObjective] = []
    other: list[str] = []
    selectors: list[str] = []
    for obj in objectives:
        names = obj.pool_names
        if obj.spec.pool_selector is not None:
            selectors.append(obj.name)
        if pool is not None and names and pool not in names:
            other.append(obj.name)
            continue
        kept.append(obj)
    return Selection(tuple(kept), tuple(other), tuple(selectors))


class ObjectiveTable:
    """Objective name -> priority, replaced whole on every change (file reload or watch).

    ``on_change`` gets the set of priorities in use after each change (the desired bands)."""

    def __init__(self, on_change: Callable[[frozenset[int]], None] | None = None) -> None:
        self._priorities: dict[str, int] = {}
        self.on_change = on_change

    def priority_of(self, name: str | None) -> int:
        """The priority of objective ``name``; 0 when unknown or absent."""
        if not name:
            return 0
        return self._priorities.get(name, 0)

    def known(self, name: str) -> bool:
        return name in self._priorities

    def names(self) -> dict[str, int]:
        return dict(self._priorities)

    def replace(self, objectives: Iterable[InferenceObjective]) -> None:
        """Install a new full set of objectives."""
        self._priorities = {o.name: o.priority for o in objectives}
        self._changed()

    def upsert(self, obj: InferenceObjective) -> None:
        """Add or change one objective (a watch event)."""
        self._priorities[obj.name] = obj.priority
        self._changed()

    def remove(self, name: str) -> None:
        """Forget one objective (a watch event)."""
        if self._priorities.pop(name, None) is not None:
            self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(frozenset(self._priorities.values()))
