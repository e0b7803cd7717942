"""The coordinator's Batch API service: batch lines checked and placed as the coordinator's
own queued requests are.

A line's body is held to the queued-request rules (``validation.py``) and its model to the
routes' served models; the line goes to its tenant's ``batch``-tier queue
(:meth:`~sluiceway.coordinator.routes.TenantRoutes.batch_queue`) with the quota attribute set
to the tenant, so the processor's quota classes, lanes and gates apply to it as to live work.
"""

from __future__ import annotations

from typing import Any

from sluiceway.batch.runner import RunnerParts
from sluiceway.batch.service import BatchService
from sluiceway.batch.stores import BatchStores
from sluiceway.broker.base import Broker
from sluiceway.clock import Clock
from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.routes import TenantRoutes
from sluiceway.coordinator.validation import check_queued_body

__all__ = ["batch_service"]


def batch_service(
    params: AsyncBrokerParams, broker: Broker, stores: BatchStores, *, clock: Clock, notify: bool
) -> BatchService:
    """The Batch API over ``stores``, queueing into ``broker``."""
    routes = TenantRoutes(params)

    def check(body: dict[str, Any], url: str) -> str | None:
        model = str(body.get("model"))
        if not routes.serves(model):
            return f"model {model!r} is not served here"
        try:
            check_queued_body(body, url)
        except RequestRejected as exc:
            return str(exc)
        return None

    def place(tenant: str, model: str) -> str:
        return routes.batch_queue(model=model, tenant=tenant)

    parts = RunnerParts(
        broker=broker,
        jobs=stores.jobs,
        files=stores.files,
        clock=clock,
        quota_attribute=params.quota.attribute,
        notify=notify,
        group_prompts=params.batch.group_prompts,
    )
    return BatchService(parts, place=place, check_body=check)
