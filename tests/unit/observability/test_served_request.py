"""A request's record: the route label, the facts from the response head, derived times."""

from __future__ import annotations

from sluiceway.observability.served_request import (
    NO_RESPONSE,
    UNMATCHED_ROUTE,
    ServedRequest,
    route_template,
)

ROUTES = {"/v1/completions", "/metrics"}
TEMPLATES = (("/v1/requests/", "/v1/requests/{id}"),)


def record(**changes: object) -> ServedRequest:
    found = ServedRequest("router", "POST", "/v1/completions", "/v1/completions", 100.0, 10**18)
    for key, value in changes.items():
        setattr(found, key, value)
    return found


def test_route_label_is_the_table_template_never_the_raw_path() -> None:
    assert route_template("/v1/completions", ROUTES, TEMPLATES) == "/v1/completions"
    assert route_template("/v1/requests/abc-123", ROUTES, TEMPLATES) == "/v1/requests/{id}"
    assert route_template("/v1/requests/other", ROUTES, TEMPLATES) == "/v1/requests/{id}"
    assert route_template("/no/such/path/42", ROUTES, TEMPLATES) == UNMATCHED_ROUTE
    assert route_template("/v1/completions/", ROUTES) == UNMATCHED_ROUTE


def test_response_head_gives_status_id_reason_and_stream() -> None:
    found = record(request_id="asked")
    found.response_started(
        429,
        [
            (b"content-type", b"application/json"),
            (b"x-request-id", b"told"),
            (b"x-llm-d-request-dropped-reason", b"rejected-saturated"),
        ],
    )
    assert (found.status, found.request_id, found.reason, found.stream) == (
        429,
        "told",
        "rejected-saturated",
        False,
    )
    streamed = record()
    streamed.response_started(200, [(b"content-type", b"text/event-stream; charset=utf-8")])
    assert streamed.stream and streamed.request_id == ""


def test_times_derive_from_the_steps() -> None:
    found = record(queued_at=100.5, dispatched_at=101.0, admitted_at=101.25, first_byte_at=102.0)
    found.ended_at = 103.0
    assert found.queue_seconds == 0.5
    assert found.ttfb_seconds == 2.0
    assert found.duration_seconds == 3.0
    assert found.epoch_ns(101.0) == 10**18 + 1_000_000_000
    # no dispatch (dropped): queued until admission answered
    assert record(queued_at=100.5, admitted_at=100.75).queue_seconds == 0.25
    never = record()
    assert never.queue_seconds is None and never.ttfb_seconds is None


def test_end_reads_what_went_out_and_marks_a_request_that_sent_nothing() -> None:
    silent = record()
    silent.end()
    assert silent.status == NO_RESPONSE and silent.ended_at > 0 and silent.ttfb_seconds is None
    answered = record()
    head = [(b"x-llm-d-request-dropped-reason", b"rejected-ttl-expired")]
    answered.response.status, answered.response.headers = 503, head
    answered.response.first_byte_at = answered.started + 0.25
    answered.end()
    assert (answered.status, answered.reason, answered.ttfb_seconds) == (
        503,
        "rejected-ttl-expired",
        0.25,
    )


def test_failures_are_server_errors_and_streams_that_ended_early() -> None:
    assert record(status=502).failed
    assert record(status=200, reason="incomplete").failed
    assert record(status=200, reason="evicted").failed
    assert not record(status=429, reason="rejected-saturated").failed
    assert not record(status=200, reason="cancelled").failed
