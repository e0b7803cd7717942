"""The start-up check for a mixed fleet: llm-d-async processors and sluiceway on one queue.

The two do not coordinate: an upstream processor of the destructive-pop era holds its
in-flight requests only in memory, and one of the claim era keeps claims sluiceway neither
renews nor counts against its quotas. Migrating means draining the old fleet first
(docs/processor.md). Where another consumer's claims are visible at start-up (owner tokens
sluiceway did not mint), a warning names the queues.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from sluiceway.processor.work_item import OWNER_PREFIX

__all__ = ["ListsClaimOwners", "foreign_claims", "warn_about_foreign_claims"]

log = logging.getLogger(__name__)


@runtime_checkable
class ListsClaimOwners(Protocol):
    """A broker that can list the owner tokens of a queue's claims (the Redis broker)."""

    async def claim_owners(self, queue: str) -> list[str]:
        """The owner tokens of the claims held on ``queue``."""
        ...


async def foreign_claims(broker: ListsClaimOwners, queues: Sequence[str]) -> dict[str, int]:
    """Queue name -> claims whose owner is not a sluiceway processor (queues with none left
    out)."""
    found: dict[str, int] = {}
    for queue in queues:
        foreign = sum(
            not owner.startswith(OWNER_PREFIX) for owner in await broker.claim_owners(queue)
        )
        if foreign:
            found[queue] = foreign
    return found


async def warn_about_foreign_claims(broker: object, queues: Sequence[str]) -> dict[str, int]:
    """Log one warning naming the queues other consumers hold claims on (best effort: a
    broker that cannot list claims, or fails to, is skipped)."""
    if not isinstance(broker, ListsClaimOwners):
        return {}
    try:
        found = await foreign_claims(broker, queues)
    except Exception:  # a start-up hint must not stop the start
        log.debug("could not list claim owners", exc_info=True)
        return {}
    if found:
        named = ", ".join(f"{queue} ({count})" for queue, count in sorted(found.items()))
        log.warning(
            "claims held by consumers that are not sluiceway processors (an llm-d-async "
            "fleet?) on: %s; the two do not coordinate: drain the old fleet before moving "
            "these queues to sluiceway",
            named,
        )
    return found
