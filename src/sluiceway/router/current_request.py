"""The request a router task serves, and the facts only the gateway knows.

:class:`~sluiceway.router.observed_app.ObservedRouterApp` makes each request's
:class:`CurrentRequest` (its :class:`~sluiceway.observability.served_request.ServedRequest`,
and the exchange once there is one) current in :data:`CURRENT` while its handler runs; the
gateway calls the functions below at its steps (who the request is, admission, each upstream
attempt), and the app calls :func:`settle` when the handler returns. Each is a context-variable
read and a few stores, and does nothing when no request is current (a gateway driven without
the observed app).
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.tracing import inject_trace
from sluiceway.router.exchange import Exchange
from sluiceway.router.identity import Identity

__all__ = ["CURRENT", "CurrentRequest", "admitted", "identified", "settle", "upstream"]


@dataclass(slots=True)
class CurrentRequest:
    """The request a handler serves: its record, and its exchange once it has one."""

    record: ServedRequest
    exchange: Exchange | None = None


CURRENT: Final[ContextVar[CurrentRequest | None]] = ContextVar(
    "sluiceway_router_request", default=None
)


def identified(ex: Exchange, ident: Identity, priority: int) -> None:
    """The request is about to enter admission: who it is, its band, its model."""
    current = CURRENT.get()
    if current is None:
        return
    current.exchange = ex
    record = current.record
    record.tenant = ident.fairness_id
    record.objective = ident.objective or ""
    record.priority = priority
    record.model = ex.model
    if not record.request_id:
        record.request_id = ex.request_id
    record.queued_at = time.perf_counter()


def admitted(ex: Exchange) -> None:
    """Admission answered: dispatched (``ex.member`` set) or dropped."""
    current = CURRENT.get()
    if current is None:
        return
    record = current.record
    record.admitted_at = time.perf_counter()
    record.dispatched_at = ex.dispatched_at
    if ex.member is not None:
        record.endpoint = ex.member.url


def upstream(headers: MutableMapping[str, str], endpoint: str) -> None:
    """An upstream attempt to ``endpoint`` starts with ``headers``: the first opens the client
    span; every attempt carries its context (``traceparent``)."""
    current = CURRENT.get()
    if current is None:
        return
    record = current.record
    if not record.upstream_at:
        record.upstream_at = time.perf_counter()
    record.endpoint = endpoint
    if record.trace is not None:
        inject_trace(record, headers, "upstream")


def settle(current: CurrentRequest) -> None:
    """At the end: the tokens used, and how a request that did not complete ended."""
    ex, record = current.exchange, current.record
    if ex is None:
        return
    if ex.usage is not None:
        record.prompt_tokens = ex.usage.prompt_tokens
        record.completion_tokens = ex.usage.completion_tokens
    if ex.evicted:
        record.reason = "evicted"
    elif ex.disconnected and not ex.complete:
        record.reason = "cancelled"
    elif ex.started and not ex.complete:
        record.reason = "incomplete"
