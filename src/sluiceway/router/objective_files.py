"""InferenceObjectives from a YAML/JSON file or a directory of them, reloaded on change.

A directory is read whole (``*.yaml``, ``*.yml``, ``*.json``, sorted by name) and watched
with :func:`~sluiceway.router.path_watch.watch_path`: a reload that fails (bad YAML, a
duplicate name) keeps the objectives in force and logs why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from sluiceway.config.documents import read_documents
from sluiceway.config.objectives import InferenceObjective, load_objectives
from sluiceway.errors import ConfigError
from sluiceway.router.objectives import ObjectiveTable, Selection, select_for_pool
from sluiceway.router.path_watch import watch_path

__all__ = ["apply_objectives", "load_objective_path", "watch_objective_path"]

log = logging.getLogger(__name__)

_SUFFIXES = (".yaml", ".yml", ".json")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in _SUFFIXES and p.is_file())
    if path.is_file():
        return [path]
    raise ConfigError(f"{path} does not exist", field="--objectives")


def load_objective_path(path: Path) -> tuple[list[InferenceObjective], list[str]]:
    """Every objective under ``path`` and the loader's warnings; ConfigError on bad input,
    with the file in the field path."""
    documents: list[object] = []
    for file in _files(path):
        documents.extend(read_documents(file))
    loaded = load_objectives(documents, path=str(path))
    return loaded.value, list(loaded.warnings)


def apply_objectives(
    path: Path, table: ObjectiveTable, pool: str | None
) -> tuple[Selection, list[str]]:
    """Load ``path`` into ``table``; returns the selection and every note for the operator."""
    objectives, warnings = load_objective_path(path)
    selection = select_for_pool(objectives, pool)
    table.replace(selection.kept)
    return selection, warnings + selection.notes(pool)


async def watch_objective_path(
    path: Path,
    table: ObjectiveTable,
    pool: str | None,
    *,
    stop: asyncio.Event | None = None,
    on_reload: Callable[[list[str]], None] | None = None,
    debounce_ms: int = 200,
) -> None:
    """Reload ``path`` into ``table`` after every change until ``stop`` is set."""

    async def reload() -> None:
        _, notes = apply_objectives(path, table, pool)
        for note in notes:
            log.warning("%s", note)
        log.info("objectives reloaded: %s", table.names())
        if on_reload is not None:
            on_reload(notes)

    await watch_path(path, reload, what="objectives", stop=stop, debounce_ms=debounce_ms)
