from __future__ import annotations

import json

import pytest

from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.config.documents import MAX_NESTING
from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.intake import (
    AsyncMode,
    mode_of,
    parse_request_body,
    request_id_of,
    timeout_of,
)
from sluiceway.coordinator.routes import TenantRoutes

PARAMS = AsyncBrokerParams.model_validate(
    {"redis_url": "memory://", "timeouts": {"wait": {"default_seconds": 300, "max_seconds": 600}}}
)
ROUTES = TenantRoutes(PARAMS)


def rejected(fn: object, *args: object) -> RequestRejected:
    with pytest.raises(RequestRejected) as err:
        fn(*args)  # type: ignore[operator]
    return err.value


def test_modes() -> None:
    assert mode_of(None) is None
    assert mode_of(" Wait ") is AsyncMode.WAIT
    assert rejected(mode_of, "later").status == 400


def test_a_body_names_its_model() -> None:
    body = parse_request_body(
        json.dumps({"model": "m", "prompt": "p"}).encode(), AsyncMode.WAIT, ROUTES
    )
    assert (body.model, body.stream) == ("m", False)


@pytest.mark.parametrize(
    ("raw", "mode", "code"),
    [
        (b"{not json", AsyncMode.WAIT, "invalid_json"),
        (b"[1]", AsyncMode.WAIT, "invalid_json"),
        (b'{"model": "m", "stream": true}', AsyncMode.ENQUEUE, "stream_unsupported"),
        (b'{"prompt": "p"}', AsyncMode.PASSTHROUGH, "missing_model"),
    ],
)
def test_bad_bodies_are_400(raw: bytes, mode: AsyncMode, code: str) -> None:
    err = rejected(parse_request_body, raw, mode, ROUTES)
    assert (err.status, err.code) == (400, code)


def test_stream_is_fine_in_passthrough() -> None:
    assert parse_request_body(
        b'{"model": "m", "stream": true}', AsyncMode.PASSTHROUGH, ROUTES
    ).stream


def test_an_unserved_model_is_404() -> None:
    routes = TenantRoutes(
        AsyncBrokerParams.model_validate({"redis_url": "memory://", "routes": [{"model": "a"}]})
    )
    err = rejected(parse_request_body, b'{"model": "b"}', AsyncMode.WAIT, routes)
    assert (err.status, err.code) == (404, "model_not_found")


def test_request_ids_are_validated_or_minted() -> None:
    assert request_id_of({"x-request-id": "abc-123"}) == ("abc-123", True)
    minted, given = request_id_of({})
    assert not given and len(minted) == 36
    assert rejected(request_id_of, {"x-request-id": "a b"}).status == 400
    assert rejected(request_id_of, {"x-request-id": "x" * 129}).status == 400


def test_the_id_the_coordinator_minted_is_its_own_not_the_callers() -> None:
    rid = "7f0c5a8e-0000-4000-8000-000000000001"
    assert request_id_of({"x-request-id": rid}, minted=rid) == (rid, False)
    assert request_id_of({"x-request-id": rid}, minted="another") == (rid, True)


def test_timeouts_default_and_clamp() -> None:
    assert timeout_of(None, AsyncMode.WAIT, PARAMS) == 300
    assert timeout_of("900", AsyncMode.WAIT, PARAMS) == 600
    assert timeout_of("20", AsyncMode.WAIT, PARAMS) == 20
    assert timeout_of(None, AsyncMode.ENQUEUE, PARAMS) == 3600
    assert timeout_of("99999", AsyncMode.ENQUEUE, PARAMS) == 99999
    assert rejected(timeout_of, "0", AsyncMode.WAIT, PARAMS).status == 400
    assert rejected(timeout_of, "1.5", AsyncMode.WAIT, PARAMS).status == 400


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "m", "prompt": "p", "max_tokens": NaN}',
        b'{"model": "m", "prompt": "p", "max_tokens": 1e309}',
        b'{"model": "m", "prompt": "p", "temperature": -Infinity}',
        b'{"model": "m", "prompt": "\\ud800"}',  # a lone surrogate: no UTF-8 for it
    ],
    ids=["nan", "1e309", "-infinity", "lone-surrogate"],
)
def test_what_strict_json_refuses_is_400_in_every_mode(raw: bytes) -> None:
    for mode in AsyncMode:
        err = rejected(parse_request_body, raw, mode, ROUTES)
        assert (err.status, err.code) == (400, "invalid_json")


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 1000, 5000])
def test_a_body_nested_past_the_limit_is_400(depth: int) -> None:
    raw = b'{"model": "m", "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    err = rejected(parse_request_body, raw, AsyncMode.WAIT, ROUTES)
    assert (err.status, err.code) == (400, "too_deep")
    assert "64 levels" in str(err)


def test_a_body_at_the_nesting_limit_passes() -> None:
    inner = b"[" * (MAX_NESTING - 1) + b"]" * (MAX_NESTING - 1)
    assert parse_request_body(b'{"model": "m", "x": ' + inner + b"}", AsyncMode.WAIT, ROUTES)
