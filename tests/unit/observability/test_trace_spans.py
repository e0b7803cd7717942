"""A request's spans as tuples, from its record and the ids drawn for it (pure)."""

from __future__ import annotations

import itertools

from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.trace_spans import (
    CLIENT,
    INTERNAL,
    SERVER,
    RequestTrace,
    SpanData,
    spans_of,
)

EPOCH = 10**18


def _record(**facts: object) -> ServedRequest:
    record = ServedRequest("router", "POST", "/v1/completions", "/v1/completions", 10.0, EPOCH)
    for key, value in facts.items():
        setattr(record, key, value)
    return record


def test_a_relayed_request_has_its_steps_and_client_span_under_the_server_span() -> None:
    record = _record(
        queued_at=10.001,
        dispatched_at=10.004,
        admitted_at=10.005,
        upstream_at=10.006,
        endpoint="http://10.0.0.1:8000",
        status=200,
        priority=0,
        tenant="a",
        completion_tokens=16,
        ended_at=10.5,
    )
    trace = RequestTrace(0xAB, 0x11, 0x22, True, True, client_id=0x33, client_name="upstream")
    ids = itertools.count(100)
    server, queue, dispatch, client = spans_of(record, trace, lambda: next(ids))
    assert server == SpanData(
        "POST /v1/completions",
        0x11,
        0x22,
        SERVER,
        EPOCH,
        EPOCH + 500_000_000,
        (
            ("http.request.method", "POST"),
            ("http.route", "/v1/completions"),
            ("url.path", "/v1/completions"),
            ("sluiceway.component", "router"),
            ("http.response.status_code", 200),
            ("sluiceway.tenant", "a"),
            ("sluiceway.priority", 0),  # zero is a fact, kept; empty strings are not
            ("sluiceway.endpoint", "http://10.0.0.1:8000"),
            ("gen_ai.usage.output_tokens", 16),
        ),
    )
    where = (("server.address", "http://10.0.0.1:8000"),)
    assert queue == SpanData(
        "flow_control.queue", 100, 0x11, INTERNAL, EPOCH + 1_000_000, EPOCH + 4_000_000, ()
    )
    assert dispatch == SpanData(
        "dispatch", 101, 0x11, INTERNAL, EPOCH + 4_000_000, EPOCH + 5_000_000, where
    )
    assert client == SpanData(
        "upstream",
        0x33,
        0x11,
        CLIENT,
        EPOCH + 6_000_000,
        EPOCH + 500_000_000,
        (("http.response.status_code", 200), *where),
    )


def test_a_request_cut_before_flow_control_has_the_server_span_alone() -> None:
    record = _record(status=503, ended_at=10.002)
    (server,) = spans_of(record, RequestTrace(1, 2, 0, False, True), lambda: 0)
    assert server.error and server.parent_id == 0
    assert server.end_ns - server.start_ns == 2_000_000


def test_a_drop_in_the_queue_ends_the_queue_span_at_the_end() -> None:
    record = _record(queued_at=10.001, status=429, reason="x", ended_at=10.003)
    server, queue = spans_of(record, RequestTrace(1, 2, 0, False, True), lambda: 7)
    assert not server.error and ("sluiceway.reason", "x") in server.attributes
    assert (queue.name, queue.span_id, queue.end_ns) == ("flow_control.queue", 7, EPOCH + 3_000_000)
