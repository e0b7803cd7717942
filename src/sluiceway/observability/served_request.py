"""One request's facts, filled in as it goes: what the access log, the HTTP metrics and the
trace spans are all made from (pure; no I/O).

The component that serves a request opens a :class:`ServedRequest` when it arrives; admission,
dispatch and the upstream call each add their fact, the response head and its first body byte
are read from what went out; at the end the record is handed, whole, to the sinks. One record
per request keeps the three sinks telling the same story, and a sink that is off costs nothing
on the way.

Times are ``time.perf_counter()`` seconds (wall time, never the scaled clock: operators read
these against their own clocks); ``wall_ns`` anchors them to the epoch for spans. A time of
0.0 means the step did not happen.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from sluiceway.wire.response_watch import ResponseWatch

__all__ = ["NO_RESPONSE", "UNMATCHED_ROUTE", "ServedRequest", "route_template"]

# The status a record keeps when no response head went out (the client left first), as nginx
# logs it.
NO_RESPONSE: Final = 499
# The route label of a path no route serves: raw paths are client input, never a label.
UNMATCHED_ROUTE: Final = "unmatched"

_REQUEST_ID: Final = b"x-request-id"
_DROPPED_REASON: Final = b"x-llm-d-request-dropped-reason"
_CONTENT_TYPE: Final = b"content-type"
_EVENT_STREAM: Final = b"text/event-stream"


def route_template(
    path: str, routes: Collection[str], prefixes: Sequence[tuple[str, str]] = ()
) -> str:
    """The route a path is labelled with: itself when the route table has it, the template of
    the first matching ``(prefix, template)`` (``/v1/requests/`` -> ``/v1/requests/{id}``),
    else :data:`UNMATCHED_ROUTE`. Label cardinality stays that of the route table."""
    if path in routes:
        return path
    for prefix, template in prefixes:
        if path.startswith(prefix):
            return template
    return UNMATCHED_ROUTE


@dataclass(slots=True, eq=False)
class ServedRequest:
    """``component``: ``router`` or ``coordinator``; ``route``: the route template (a label);
    ``path``: the raw path (logged, never a label); ``probe``: a health or metrics probe,
    counted but neither logged nor traced; ``priority``: the flow-control band (router);
    ``objective``: the objective asked for (router) or stamped (coordinator); ``mode``: the
    coordinator's mode header; ``reason``: why the request ended as it did (the dropped-reason
    header, ``evicted``, ``cancelled``, ``incomplete``); ``trace``: the tracing sink's live
    state (None while tracing is off); ``response``: what went out on ``send`` (the component
    wraps its ``send`` with :func:`~sluiceway.wire.response_watch.watch_response`), read at
    the end."""

    component: str
    method: str
    route: str
    path: str
    started: float
    wall_ns: int
    probe: bool = False
    request_id: str = ""
    tenant: str = ""
    objective: str = ""
    priority: int | None = None
    mode: str = ""
    model: str = ""
    endpoint: str = ""
    status: int = 0
    reason: str = ""
    stream: bool = False
    queued_at: float = 0.0
    dispatched_at: float = 0.0
    admitted_at: float = 0.0
    upstream_at: float = 0.0
    first_byte_at: float = 0.0
    ended_at: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    trace: object | None = None
    response: ResponseWatch = field(default_factory=ResponseWatch)

    @classmethod
    def open(
        cls, component: str, method: str, route: str, path: str, *, probe: bool = False
    ) -> ServedRequest:
        """A record for a request arriving now."""
        return cls(component, method, route, path, time.perf_counter(), time.time_ns(), probe)

    # ---- facts -------------------------------------------------------------------------
    def response_started(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """The response head went out: its status, the id the client was told, the reason of a
        drop, whether it streams."""
        self.status = status
        for name, value in headers:
            if name == _REQUEST_ID:
                self.request_id = value.decode("latin-1")
            elif name == _DROPPED_REASON:
                self.reason = value.decode("latin-1")
            elif name == _CONTENT_TYPE:
                self.stream = value.startswith(_EVENT_STREAM)

    def end(self) -> None:
        """The handler returned: what went out is read from :attr:`response`; a request that
        never sent a head is :data:`NO_RESPONSE`."""
        self.ended_at = time.perf_counter()
        seen = self.response
        if seen.status:
            self.response_started(seen.status, seen.headers)
        self.first_byte_at = seen.first_byte_at
        if not self.status:
            self.status = NO_RESPONSE

    # ---- derived -----------------------------------------------------------------------
    @property
    def queue_seconds(self) -> float | None:
        """Seconds in flow control, from arrival there to dispatch (None: never queued)."""
        if not self.queued_at:
            return None
        until = self.dispatched_at or self.admitted_at or self.ended_at
        return max(0.0, until - self.queued_at)

    @property
    def ttfb_seconds(self) -> float | None:
        """Seconds from arrival to the first body byte (None: no body went out)."""
        return self.first_byte_at - self.started if self.first_byte_at else None

    @property
    def duration_seconds(self) -> float:
        return max(0.0, (self.ended_at or time.perf_counter()) - self.started)

    @property
    def failed(self) -> bool:
        """A server-side failure or a request that ended abnormally: always logged."""
        return self.status >= 500 or self.reason in ("evicted", "incomplete")

    def epoch_ns(self, at: float) -> int:
        """``at`` (perf_counter seconds) as Unix nanoseconds, for spans."""
        return self.wall_ns + round((at - self.started) * 1e9)
