"""The batches ``sluiceway status`` lists: every batch not yet in a final status, read from
the job store in the broker's database (docs/batch.md), with its progress and time left."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluiceway.batch.status import BatchJob

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["BatchRow", "active_batch_rows", "batch_row", "render_batches"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One unfinished batch: id, tenant, status as callers see it, its counts and the scaled
    seconds left in its window."""

    id: str
    tenant: str
    status: str
    total: int
    completed: int
    failed: int
    queued: int
    expires_in: float


def batch_row(job: BatchJob, now: float) -> BatchRow:
    counts = job.counts
    return BatchRow(
        id=job.id,
        tenant=job.tenant,
        status=str(job.shown_status),
        total=counts.total,
        completed=counts.completed,
        failed=counts.failed,
        queued=job.ingested,
        expires_in=job.expires_at - now,
    )


async def active_batch_rows(
    transport: str, broker: Any, url: str | None, now: float
) -> list[BatchRow]:
    """The unfinished batches in ``broker``'s database, oldest first (none where the transport
    keeps no batches or they cannot be read: ``status`` shows the queues all the same)."""
    from sluiceway.batch.stores import open_job_store
    from sluiceway.broker.base import BrokerOptions
    from sluiceway.errors import ConfigError

    try:
        jobs = await open_job_store(transport, broker, BrokerOptions(url=url))
    except ConfigError:
        return []
    if jobs is None:
        return []
    try:
        active = await jobs.active_batches()
    except Exception as exc:  # e.g. a Redis user granted the queues but not ``batch:*``
        log.debug("batches not listed: %s", exc)
        return []
    finally:
        await jobs.aclose()
    return [batch_row(j, now) for j in sorted(active, key=lambda j: (j.created_at, j.id))]


def render_batches(rows: list[BatchRow]) -> Table:
    from rich.table import Table

    table = Table(title="batches")
    for name in ("batch", "tenant", "status", "done / total", "failed", "queued", "window left"):
        table.add_column(name)
    for r in rows:
        table.add_row(
            r.id,
            r.tenant,
            r.status,
            f"{r.completed + r.failed} / {r.total}",
            str(r.failed),
            str(r.queued),
            f"{r.expires_in / 3600:.1f} h",
        )
    return table
