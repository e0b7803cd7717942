"""Reload something read from a file or directory whenever it changes on disk.

The parent directory of a file is what gets watched, because Kubernetes ConfigMap volumes
update by swapping a symlink (the file itself never changes). A reload that fails keeps what
is in force and logs one ERROR line; the same failure again (an editor saving twice, another
file of the directory changing) is not logged again until a reload succeeds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from watchfiles import awatch

from sluiceway.errors import SluicewayError

__all__ = ["watch_path"]

log = logging.getLogger(__name__)


async def watch_path(
    path: Path,
    reload: Callable[[], Awaitable[None]],
    *,
    what: str,
    stop: asyncio.Event | None = None,
    debounce_ms: int = 200,
) -> None:
    """Call ``reload`` after every change under ``path`` until ``stop`` is set; a
    :class:`SluicewayError` it raises is logged (``<what> reload failed, keeping the previous
    set: ...``) and the watch goes on."""
    target = path if path.is_dir() else path.parent  # noqa: ASYNC240 - once, at start
    failed: str | None = None
    async for changes in awatch(target, stop_event=stop, debounce=debounce_ms, step=20):
        log.debug("%s: %d changes under %s, reloading", what, len(changes), target)
        try:
            await reload()
        except SluicewayError as exc:
            if str(exc) != failed:
                log.error("%s reload failed, keeping the previous set: %s", what, exc)
                failed = str(exc)
            continue
        failed = None
