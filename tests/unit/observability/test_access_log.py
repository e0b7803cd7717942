"""The access log: the line and its fields from a record, sampling with an injected draw, the
text and JSON forms."""

from __future__ import annotations

import io
import json
import logging

import pytest

from sluiceway.errors import ConfigError
from sluiceway.observability.access_log import (
    ACCESS_FIELDS,
    ACCESS_LOGGER,
    AccessLog,
    access_fields,
    access_line,
    configure_access_log,
)
from sluiceway.observability.logging import JsonFormatter
from sluiceway.observability.served_request import ServedRequest


def served(status: int = 200, **changes: object) -> ServedRequest:
    found = ServedRequest("router", "POST", "/v1/chat/completions", "/v1/chat/completions", 10.0, 0)
    found.request_id, found.tenant, found.objective, found.priority = "r-1", "team a", "gold", 7
    found.model, found.endpoint, found.stream = "m", "http://10.0.0.1:8000", True
    found.queued_at, found.dispatched_at, found.first_byte_at = 10.001, 10.003, 10.050
    found.prompt_tokens, found.completion_tokens = 12, 128
    found.status, found.ended_at = status, 11.0
    for key, value in changes.items():
        setattr(found, key, value)
    return found


def test_fields_carry_every_fact_in_milliseconds() -> None:
    fields = access_fields(served(), trace_id="ab" * 16)
    assert set(fields) == {"method", "path", "status", *ACCESS_FIELDS}
    assert fields["queue_ms"] == 2.0
    assert fields["ttft_ms"] == 50.0
    assert fields["duration_ms"] == 1000.0
    assert (fields["tenant"], fields["priority"], fields["trace_id"]) == ("team a", 7, "ab" * 16)
    assert access_fields(served(model="", priority=None))["model"] is None


def test_text_line() -> None:
    line = access_line(access_fields(served()))
    assert line.startswith("POST /v1/chat/completions 200 id=r-1 component=router ")
    assert ' tenant="team a" objective=gold priority=7 ' in line
    assert " queue_ms=2.0 ttft_ms=50.0 prompt_tokens=12 completion_tokens=128 " in line
    assert line.endswith(" duration_ms=1000.0 trace_id=-")
    assert " mode=- " in line and " stream=true " in line


class Draws:
    """An injected random source: the values it returns, and how often it was asked."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.asked = 0

    def __call__(self) -> float:
        self.asked += 1
        return self.values.pop(0)


def test_sampling_keeps_a_draw_under_the_fraction() -> None:
    draws = Draws(0.05, 0.5, 0.1)
    log = AccessLog(0.1, draw=draws)
    assert [log.wants(served()) for _ in range(3)] == [True, False, False]


def test_failures_are_logged_whatever_the_draw_and_zero_is_off() -> None:
    draws = Draws()
    sampled = AccessLog(0.01, draw=draws)
    assert sampled.wants(served(502))
    assert sampled.wants(served(200, reason="incomplete"))
    assert draws.asked == 0
    off = AccessLog(0.0, draw=draws)
    assert not off.wants(served(502)) and not off.wants(served())
    every = AccessLog(1.0, draw=draws)
    assert every.wants(served()) and draws.asked == 0
    assert not every.wants(served(probe=True))


def test_sample_outside_0_to_1_names_the_flag() -> None:
    with pytest.raises(ConfigError, match="--access-log-sample"):
        AccessLog(1.5)
    with pytest.raises(ConfigError):
        AccessLog(-0.1)


def test_a_request_sampled_out_is_not_formatted(caplog: pytest.LogCaptureFixture) -> None:
    log = AccessLog(0.5, draw=Draws(0.9))
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        log.write(served())
    assert caplog.records == []


def _written(fmt: str) -> str:
    stream = io.StringIO()
    logger = logging.getLogger(ACCESS_LOGGER)
    try:
        configure_access_log(fmt, stream=stream)
        AccessLog(1.0).write(served(), trace_id="0" * 31 + "1")
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    return stream.getvalue()


def test_json_form_has_every_field_as_a_key() -> None:
    doc = json.loads(_written("json"))
    assert doc["logger"] == ACCESS_LOGGER and doc["level"] == "info"
    assert doc["message"] == "POST /v1/chat/completions 200"
    assert doc["request_id"] == "r-1" and doc["tenant"] == "team a" and doc["priority"] == 7
    assert doc["ttft_ms"] == 50.0 and doc["mode"] is None
    assert doc["trace_id"] == "0" * 31 + "1"


def test_json_form_is_the_process_json_line() -> None:
    """The access log's own JSON formatter writes what the process's JSON formatter would."""
    record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, "", 0, "%s %s", ("POST", "/"), None)
    record.__dict__.update(access_fields(served(), "0" * 32))
    logger = logging.getLogger(ACCESS_LOGGER)
    try:
        configure_access_log("json", stream=io.StringIO())
        (ours,) = logger.handlers
        line = ours.format(record)
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    assert line == JsonFormatter().format(record)
    assert json.loads(line)["tenant"] == "team a"


def test_text_form_is_time_then_the_line() -> None:
    text = _written("text").strip()
    assert " POST /v1/chat/completions 200 id=r-1 " in text
    assert text.endswith("trace_id=" + "0" * 31 + "1")
    assert text[:4].isdigit()  # the time first
