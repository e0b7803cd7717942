"""Tenant routes: which queue and tier a request goes to, and which models are served (pure).

First matching route wins; an empty field of a route matches everything; a route's empty queue
or tier means the defaults. When any route names a model, only named models are served (others
are 404 ``model_not_found``); when none does, every model is, and ``GET /v1/models`` is the
gateway's own list. A Batch API line goes to a ``batch``-tier queue (``batch_queue``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sluiceway.config.coordinator import AsyncBrokerParams

__all__ = ["Placement", "TenantRoutes"]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a request of one tenant and model goes: its queue and its tier."""

    queue: str
    tier: str


class TenantRoutes:
    """The routes, defaults and per-tier objectives of one coordinator configuration."""

    def __init__(self, params: AsyncBrokerParams) -> None:
        self._params = params
        self._models = tuple(dict.fromkeys(r.model for r in params.routes if r.model))

    @property
    def models(self) -> tuple[str, ...]:
        """The models routes name, in route order (empty: every model is served)."""
        return self._models

    def serves(self, model: str) -> bool:
        return not self._models or model in self._models

    def place(self, *, model: str, tenant: str) -> Placement:
        p = self._params
        for route in p.routes:
            if route.model in ("", model) and route.tenant in ("", tenant):
                return Placement(route.queue or p.default_queue, route.tier or p.default_tier)
        return Placement(p.default_queue, p.default_tier)

    def batch_queue(self, *, model: str, tenant: str) -> str:
        """The queue of a batch line: the tenant's own queue when its tier is ``batch``, else
        the queue of a route of tier ``batch`` (the tenant's own first), else the default."""
        placed = self.place(model=model, tenant=tenant)
        if placed.tier == "batch" and placed.queue:
            return placed.queue
        p = self._params
        batch = [r for r in p.routes if r.tier == "batch" and r.model in ("", model)]
        for route in sorted(batch, key=lambda r: r.tenant not in ("", tenant)):
            if route.queue:
                return route.queue
        return p.default_queue

    def objective(self, tier: str, *, reserved: bool) -> str:
        """The objective stamped for ``tier``'s reserved or overflow class ("" for none)."""
        objectives = self._params.objectives.get(tier)
        if objectives is None:
            return ""
        return objectives.reserved if reserved else objectives.overflow
