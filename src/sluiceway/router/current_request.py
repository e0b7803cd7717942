"""The record of the request this task serves, and the facts only the gateway knows.

:class:`~sluiceway.router.observed_app.ObservedRouterApp` makes each request's
:class:`~sluiceway.observability.served_request.ServedRequest` current in :data:`CURRENT`
while its handler runs; the gateway calls the functions below at its steps (who the request
is, admission, each upstream attempt). Each is a context-variable read and a few stores, and
does nothing when no record is current (a gateway driven without the observed app).
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from contextvars import ContextVar
from typing import Final

from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.tracing import inject_trace
from sluiceway.router.exchange import Exchange
from sluiceway.router.identity import Identity

__all__ = ["CURRENT", "admitted", "identified", "upstream"]

CURRENT: Final[ContextVar[ServedRequest | None]] = ContextVar(
    "sluiceway_router_request", default=None
)


def identified(ex: Exchange, ident: Identity, priority: int) -> None:
    """The request is about to enter admission: who it is, its band, its model."""
    record = CURRENT.get()
    if record is None:
        return
    record.tenant = ident.fairness_id
    record.objective = ident.objective or ""
    record.priority = priority
    record.model = ex.model
    if not record.request_id:
        record.request_id = ex.request_id
    record.queued_at = time.perf_counter()
    record.settle = lambda: _settle(record, ex)


def admitted(ex: Exchange) -> None:
    """Admission answered: dispatched (``ex.member`` set) or dropped."""
    record = CURRENT.get()
    if record is None:
        return
    record.admitted_at = time.perf_counter()
    record.dispatched_at = ex.dispatched_at
    if ex.member is not None:
        record.endpoint = ex.member.url


def upstream(headers: MutableMapping[str, str], endpoint: str) -> None:
    """An upstream attempt to ``endpoint`` starts with ``headers``: the first opens the client
    span; every attempt carries its context (``traceparent``)."""
    record = CURRENT.get()
    if record is None:
        return
    if not record.upstream_at:
        record.upstream_at = time.perf_counter()
    record.endpoint = endpoint
    if record.trace is not None:
        inject_trace(record, headers, "upstream")


def _settle(record: ServedRequest, ex: Exchange) -> None:
    """At the end: the tokens used, and how a request that did not complete ended."""
    if ex.usage is not None:
        record.prompt_tokens = ex.usage.prompt_tokens
        record.completion_tokens = ex.usage.completion_tokens
    if ex.evicted:
        record.reason = "evicted"
    elif ex.disconnected and not ex.complete:
        record.reason = "cancelled"
    elif ex.started and not ex.complete:
        record.reason = "incomplete"
