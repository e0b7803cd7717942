"""Live requests: classify against the tenant's quota, stamp the headers, relay the stream.

Classification uses the same counters as the processor's quota gate (``<prefix><attribute>:
<tenant>``) through the quota store's holder API: within the limit a request holds a slot
(*reserved*), beyond it runs anyway as *overflow*; never blocked. The holder's lease is renewed
while the stream runs and released when it ends (completion or disconnect), so a crashed
coordinator's slots come back when their leases lapse. A tenant without a limit is always
reserved with no counter; a limit of 0 means every request is overflow. When the store cannot
be reached the request runs as overflow (it must not take a reserved slot nobody can count),
with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from sluiceway.clock import Clock
from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.routes import TenantRoutes
from sluiceway.errors import BrokerError
from sluiceway.gates.quota_store import QuotaStore, quota_key
from sluiceway.wire import headers as wire_headers

__all__ = ["QuotaHold", "QuotaKeeper", "stamped_headers"]

log = logging.getLogger(__name__)

# A passthrough holder's lease (scaled seconds); renewed every third of it while streaming.
HOLDER_LEASE_SECONDS: Final = 60.0
_STAMPED: Final = frozenset({*wire_headers.OBJECTIVE_ALIASES, *wire_headers.FAIRNESS_ID_ALIASES})


@dataclass
class QuotaHold:
    """A passthrough request's classification and, when reserved on a counter, its slot."""

    reserved: bool
    key: str = ""
    holder: str = ""


class QuotaKeeper:
    """Takes, renews and gives back passthrough quota slots."""

    def __init__(
        self, store: QuotaStore | None, params: AsyncBrokerParams, *, clock: Clock
    ) -> None:
        self._store = store
        self._quota = params.quota
        self._clock = clock

    async def take(self, tenant: str) -> QuotaHold:
        limit = self._quota.limits.get(tenant)
        if limit is None:
            return QuotaHold(reserved=True)
        if limit <= 0 or self._store is None:
            return QuotaHold(reserved=False)
        key = quota_key(self._quota.prefix, self._quota.attribute, tenant)
        holder = secrets.token_hex(8)
        now = self._clock.now()
        try:
            got = await self._store.acquire(
                key,
                holder=holder,
                limit=int(limit),
                lease_until=now + HOLDER_LEASE_SECONDS,
                now=now,
            )
        except BrokerError as exc:
            log.warning("quota store unavailable, %s runs as overflow: %s", tenant, exc)
            return QuotaHold(reserved=False)
        return QuotaHold(reserved=True, key=key, holder=holder) if got else QuotaHold(False)

    async def keep(self, hold: QuotaHold) -> None:
        """Renew ``hold``'s lease until cancelled (run as a task beside the stream)."""
        if not hold.holder or self._store is None:
            return
        while True:
            await self._clock.sleep(HOLDER_LEASE_SECONDS / 3)
            until = self._clock.now() + HOLDER_LEASE_SECONDS
            with contextlib.suppress(BrokerError):
                await self._store.renew(hold.key, holder=hold.holder, lease_until=until)

    async def give_back(self, hold: QuotaHold) -> None:
        if not hold.holder or self._store is None:
            return
        try:
            await self._store.release(hold.key, holder=hold.holder)
        except BrokerError as exc:  # the lease lapses on its own
            log.warning("quota release failed for %s (its lease will lapse): %s", hold.key, exc)

    def keeper_task(self, hold: QuotaHold) -> asyncio.Task[None] | None:
        if not hold.holder:
            return None
        return asyncio.create_task(self.keep(hold), name=f"quota-lease-{hold.holder}")


def stamped_headers(
    headers: Sequence[tuple[str, str]],
    *,
    params: AsyncBrokerParams,
    routes: TenantRoutes,
    tier: str,
    tenant: str,
    hold: QuotaHold,
    drop: Mapping[str, None] | frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    """The client's headers with objective and fairness re-stamped by the coordinator.

    Client-sent objective and fairness headers (both spellings) and the mode header are
    stripped; ``drop`` names more headers to strip (the API key when keys are configured).
    """
    strip = {*_STAMPED, params.objective_header, params.fairness_header, params.mode_header}
    strip.update(drop)
    out = [(k, v) for k, v in headers if k.lower() not in strip]
    objective = routes.objective(tier, reserved=hold.reserved)
    if objective:
        out.append((params.objective_header, objective))
    out.append((params.fairness_header, tenant))
    return out
