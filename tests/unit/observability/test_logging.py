"""Process logging: JSON lines, connection errors without tracebacks, lost/back once."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from sluiceway.config.urls import mask_credentials
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.observability.logging import (
    OutageLog,
    configure_logging,
    is_connection_error,
    named_outage_log,
    outage_log,
)


@pytest.fixture
def root_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def _broker_down() -> BrokerError:
    try:
        try:
            raise RedisConnectionError("Connection refused")
        except RedisConnectionError as cause:
            raise BrokerError("redis peek failed: Connection refused") from cause
    except BrokerError as exc:
        return exc


def test_connection_errors_are_recognised_through_their_cause() -> None:
    assert is_connection_error(_broker_down())
    assert is_connection_error(ConnectionRefusedError())
    assert not is_connection_error(BrokerError("script failed"))
    assert not is_connection_error(ValueError("bug"))


def test_json_lines_carry_level_logger_message_and_extras(root_restored: None) -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out)
    logging.getLogger("sluiceway.x").info("hello %s", "there", extra={"queue": "q"})
    logging.getLogger("sluiceway.x").debug("hidden")
    (line,) = out.getvalue().splitlines()
    doc = json.loads(line)
    assert doc["level"] == "info" and doc["logger"] == "sluiceway.x"
    assert doc["message"] == "hello there" and doc["queue"] == "q" and "time" in doc


def test_a_connection_error_is_one_line_without_traceback(root_restored: None) -> None:
    out = io.StringIO()
    configure_logging("info", "text", stream=out)
    log = logging.getLogger("sluiceway.y")
    try:
        raise _broker_down()
    except BrokerError:
        log.exception("background step failed")
    try:
        raise ValueError("a real bug")
    except ValueError:
        log.exception("worker failed")
    first, *rest = out.getvalue().splitlines()
    assert "ERROR" in first and "background step failed: redis peek failed" in first
    assert rest[0].endswith("worker failed") and "Traceback" in rest[1]
    assert "a real bug" in out.getvalue()


def test_during_an_outage_connection_noise_is_kept_out(root_restored: None) -> None:
    out = io.StringIO()
    configure_logging("info", "text", stream=out)
    log = logging.getLogger("sluiceway.y")

    class Broker:
        pass

    broker = Broker()
    outage = outage_log(broker, "broker", log)
    outage.failed(_broker_down(), "ingest of q")
    log.warning("cancel check of %s failed: %s", "r1", _broker_down())
    try:
        raise _broker_down()
    except BrokerError:
        log.exception("background step failed")
    outage.succeeded()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert "broker lost (ingest of q): redis peek failed" in lines[0]
    assert "broker is back" in lines[1]


def test_at_debug_level_outage_noise_stays_as_debug_lines(root_restored: None) -> None:
    out = io.StringIO()
    configure_logging("debug", "text", stream=out)
    log = logging.getLogger("sluiceway.y")

    class Broker:
        pass

    broker = Broker()
    outage_log(broker, "broker", log).failed(_broker_down(), "ingest of q")
    try:
        raise _broker_down()
    except BrokerError:
        log.exception("background step failed")
    last = out.getvalue().splitlines()[-1]
    assert "DEBUG" in last and "background step failed: redis peek failed" in last
    outage_log(broker, "broker", log).succeeded()


@pytest.mark.parametrize(("level", "fmt", "flag"), [("loud", "text", "--log-level"),
                                                    ("info", "xml", "--log-format")])  # fmt: skip
def test_bad_flags_name_themselves(level: str, fmt: str, flag: str) -> None:
    with pytest.raises(ConfigError) as info:
        configure_logging(level, fmt)
    assert info.value.field == flag


def test_an_outage_is_one_warning_lost_and_one_back(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    outage = OutageLog("broker", logging.getLogger("sluiceway.t"), quiet_for=0)
    outage.succeeded()
    for _ in range(50):
        outage.failed(_broker_down(), "ingest of q")
    outage.succeeded()
    outage.succeeded()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage().split(" (")[0].split(" after")[0] for r in warnings] == [
        "broker lost",
        "broker is back",
    ]
    assert warnings[1].getMessage().endswith("(50 failed calls)") and outage.failures == 50
    assert all(r.exc_info is None for r in caplog.records)


def test_a_flapping_link_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    outage = OutageLog("broker", logging.getLogger("sluiceway.t"), quiet_for=3600)
    for _ in range(5):
        outage.failed(_broker_down(), "ingest")
        outage.succeeded()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(loud) == 2 and "lost" in loud[0] and "back" in loud[1]


def test_other_errors_keep_their_traceback_every_time(caplog: pytest.LogCaptureFixture) -> None:
    outage = OutageLog("broker", logging.getLogger("sluiceway.t"))
    for _ in range(2):
        outage.failed(ValueError("bug"), "ingest")
    assert [r.levelno for r in caplog.records] == [logging.ERROR, logging.ERROR]
    assert all(r.exc_info for r in caplog.records) and not outage.lost


def test_one_outage_log_per_dependency() -> None:
    logger = logging.getLogger("sluiceway.t")

    class Dependency:
        pass

    dep = Dependency()
    assert outage_log(dep, "broker", logger) is outage_log(dep, "broker", logger)
    assert named_outage_log("upstream a", logger) is named_outage_log("upstream a", logger)
    assert named_outage_log("upstream a", logger) is not named_outage_log("upstream b", logger)


def test_no_log_line_shows_a_registered_secret(root_restored: None) -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out)
    mask_credentials("redis://app:Lg0Secret@h:6379/0")
    try:
        raise ValueError("AUTH Lg0Secret refused")
    except ValueError:
        logging.getLogger("sluiceway.t").exception("open redis://app:Lg0Secret@h failed")
    assert "Lg0Secret" not in out.getvalue() and "redis://app:***@h" in out.getvalue()
