"""The live replicas ``sluiceway status`` lists: routers (``router/<pool>``, holding capacity
leases) and processors (``processor/<pool>``, holding requests in flight), read from the
replica sets of ``sluiceway.ledger``.

Groups are found by SCAN over ``sluiceway:replicas:{*}:expiry``: no registry of groups to keep
in step (a group exists exactly while a member is in it), and SCAN walks the keyspace in small
steps without blocking Redis. ``status`` is an operator's occasional read and a deployment
holds a handful of groups, so a full scan costs little; a watch every few seconds is fine too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluiceway.ledger.replicas import Replica, ReplicaSet

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["ReplicaRow", "live_replicas", "render_replicas", "replica_row"]

_PATTERN = "sluiceway:replicas:{*}:expiry"


@dataclass(frozen=True, slots=True)
class ReplicaRow:
    """One live replica: its ``role`` and ``pool`` (from the group ``role/pool``), member name,
    what it holds (``held``: leases or requests in flight), host, pid, ``age`` (wall seconds
    since it started; None when unknown) and ``expires_in`` (wall seconds left on its last
    heartbeat)."""

    role: str
    pool: str
    member: str
    held: int
    host: str
    pid: int | None
    age: float | None
    expires_in: float


def replica_row(replica: Replica, now: float) -> ReplicaRow:
    """``replica`` as a row; ``now``: wall Unix seconds, for its age."""
    role, _, pool = replica.group.partition("/")
    info = replica.info
    started = info.get("started")
    pid = info.get("pid")
    return ReplicaRow(
        role=str(info.get("role") or role),
        pool=pool,
        member=replica.member,
        held=replica.held,
        host=str(info.get("host", "")),
        pid=pid if isinstance(pid, int) else None,
        age=max(0.0, now - started) if isinstance(started, (int, float)) else None,
        expires_in=replica.expires_in,
    )


def _group_of(key: str) -> str:
    return key[key.index("{") + 1 : key.rindex("}")]


async def live_replicas(redis: Any) -> list[ReplicaRow]:
    """Every live replica of every group on ``redis`` (decoded replies), routers first."""
    groups = sorted({_group_of(key) async for key in redis.scan_iter(match=_PATTERN, count=500)})
    now = time.time()
    rows = [
        replica_row(replica, now)
        for group in groups
        for replica in await ReplicaSet(redis, group).members()
    ]
    return sorted(rows, key=lambda r: (r.role != "router", r.role, r.pool, r.member))


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def render_replicas(rows: list[ReplicaRow]) -> Table:
    """The replicas as a rich table."""
    from rich.table import Table

    table = Table(title="live replicas", title_justify="left")
    for column in ("role", "pool", "in flight", "host", "pid", "age", "member"):
        table.add_column(
            column, justify="left" if column in ("role", "pool", "host", "member") else "right"
        )
    for r in rows:
        pid = "-" if r.pid is None else str(r.pid)
        table.add_row(r.role, r.pool, str(r.held), r.host, pid, _age(r.age), r.member)
    return table
