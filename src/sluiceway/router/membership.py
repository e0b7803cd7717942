"""Which model servers the pool holds: the static URLs plus every discovery source's latest set.

Each source (the watched ``--endpoints-file``, DNS names, Pods of an InferencePool) publishes
its whole current set under its own name; the pool is then made the union, in a stable order
(the static URLs first, then each source's in the order the sources first published). The pool
is only told when the union changes, one change at a time, so two sources publishing at once
cannot interleave their updates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

__all__ = ["Membership", "union_of"]

log = logging.getLogger(__name__)

Apply = Callable[[list[str]], Awaitable[None]]


def union_of(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """Every URL of ``groups``, once, trailing slashes dropped, first appearance first."""
    return tuple(dict.fromkeys(u.rstrip("/") for group in groups for u in group))


class Membership:
    """Feeds :meth:`Gateway.set_endpoints <sluiceway.router.gateway.Gateway.set_endpoints>`
    (``apply``) from the sources. ``initial``: sets already in the pool at start-up (the
    endpoints file as read then), so publishing them again changes nothing."""

    def __init__(
        self,
        apply: Apply,
        static: Sequence[str] = (),
        initial: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self._apply = apply
        self._static = tuple(static)
        self._sources: dict[str, tuple[str, ...]] = {
            k: tuple(v) for k, v in (initial or {}).items()
        }
        self._current = self._union()
        self._lock = asyncio.Lock()

    @property
    def urls(self) -> tuple[str, ...]:
        """The pool's members as last applied."""
        return self._current

    def source(self, name: str) -> tuple[str, ...]:
        """What ``name`` published last (empty before it did)."""
        return self._sources.get(name, ())

    async def publish(self, name: str, urls: Sequence[str]) -> None:
        """``name``'s set is now ``urls``: apply the new union if it changed."""
        self._sources[name] = tuple(urls)
        async with self._lock:
            wanted = self._union()
            if wanted == self._current:
                return
            self._current = wanted
            log.debug("membership: %s published %d, pool of %d", name, len(urls), len(wanted))
            await self._apply(list(wanted))

    def _union(self) -> tuple[str, ...]:
        return union_of([self._static, *self._sources.values()])
