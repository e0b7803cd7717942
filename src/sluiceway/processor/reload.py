"""Hot reload of the queues (``--transport-config-watch-interval``, upstream's newer feature).

Only ``queues`` may change while running: the whole file must still be a valid transport
config, and any other difference (URL, names, poll, batch, leases) is refused until a restart;
the running config stays in force and the error is logged. Unchanged queues keep their ingest,
gate and buffered requests; a changed queue is replaced (removed, then added); a removed queue
stops being read and its buffered requests go back to the broker. In-flight requests finish.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sluiceway.clock import Clock
from sluiceway.config.documents import read_document
from sluiceway.config.processor import TransportConfig, load_transport_config
from sluiceway.errors import ConfigError, SluicewayError
from sluiceway.processor.specs import QueueSpec

__all__ = ["ReloadPlan", "plan_reload", "reload_once", "watch_transport_config"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReloadPlan:
    """Queue ids to keep and remove, and specs to add (pure result of a comparison)."""

    keep: tuple[str, ...]
    remove: tuple[str, ...]
    add: tuple[QueueSpec, ...]

    @property
    def changes(self) -> bool:
        return bool(self.remove or self.add)


def plan_reload(running: Sequence[QueueSpec], wanted: Sequence[QueueSpec]) -> ReloadPlan:
    """What to do to go from ``running`` to ``wanted`` queues (by id; changed = replaced)."""
    now = {q.id: q for q in running}
    then = {q.id: q for q in wanted}
    keep = tuple(qid for qid, q in now.items() if then.get(qid) == q)
    remove = tuple(qid for qid in now if qid not in keep)
    add = tuple(q for qid, q in then.items() if qid not in keep)
    return ReloadPlan(keep, remove, add)


def _fixed_part(config: TransportConfig) -> dict[str, object]:
    return config.model_dump(exclude={"queues", "topics"})


def reload_once(path: Path, running: TransportConfig) -> TransportConfig | None:
    """The new transport config if only its queues changed; None when nothing changed.

    Raises ConfigError when the file is invalid or changes more than the queues.
    """
    data = read_document(path)
    wanted = load_transport_config(data, running.transport, env=os.environ).value
    if _fixed_part(wanted) != _fixed_part(running):
        raise ConfigError(
            "only queues may change while running; restart for the rest", field=str(path)
        )
    return None if wanted.queues == running.queues else wanted


async def watch_transport_config(
    path: Path,
    running: TransportConfig,
    *,
    interval: float,
    clock: Clock,
    apply: Callable[[TransportConfig], Awaitable[None]],
) -> None:
    """Re-read ``path`` every ``interval`` scaled seconds and apply queue changes."""
    current = running
    while True:
        await clock.sleep(interval)
        try:
            wanted = reload_once(path, current)
        except (SluicewayError, OSError) as exc:
            log.error("transport config not reloaded, keeping the running one: %s", exc)
            continue
        if wanted is not None:
            await apply(wanted)
            current = wanted
            log.info("transport config reloaded: %d queues", len(wanted.queues))
