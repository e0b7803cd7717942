"""The coordinator's request ids: minted when absent, passed on, stamped on every answer."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from sluiceway.coordinator.request_ids import MINTED, RequestIds, minted_id

Raw = list[tuple[bytes, bytes]]


class Inner:
    """An app that records the scope it got and answers with ``head``."""

    def __init__(self, head: Raw | None = None) -> None:
        self.head = head or []
        self.scope: MutableMapping[str, Any] = {}

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        self.scope = scope
        await send({"type": "http.response.start", "status": 200, "headers": list(self.head)})
        await send({"type": "http.response.body", "body": b""})


async def _call(app: Any, headers: Raw, path: str = "/x") -> dict[bytes, bytes]:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}
    await app(scope, None, send)
    return dict(sent[0]["headers"])


async def test_an_id_is_minted_passed_on_and_answered_when_none_came() -> None:
    inner = Inner()
    head = await _call(RequestIds(inner), [(b"accept", b"*/*")])
    rid = head[b"x-request-id"].decode()
    assert len(rid) == 36
    assert inner.scope["headers"] == [(b"accept", b"*/*"), (b"x-request-id", rid.encode())]
    assert minted_id(inner.scope) == rid == inner.scope[MINTED]


@pytest.mark.parametrize("given", [b"abc-1", b"req_1.x"])
async def test_the_callers_id_is_kept_and_not_marked_as_minted(given: bytes) -> None:
    inner = Inner()
    head = await _call(RequestIds(inner), [(b"x-request-id", given)])
    assert head[b"x-request-id"] == given
    assert inner.scope["headers"] == [(b"x-request-id", given)] and minted_id(inner.scope) is None


async def test_a_malformed_id_reaches_the_app_as_sent_and_the_answer_gets_a_fresh_one() -> None:
    inner = Inner()
    head = await _call(RequestIds(inner), [(b"x-request-id", b"x" * 300)])
    assert len(head[b"x-request-id"]) == 36
    assert inner.scope["headers"] == [(b"x-request-id", b"x" * 300)]  # queued: 400 for it


async def test_an_answer_that_names_its_id_keeps_it() -> None:
    inner = Inner([(b"x-request-id", b"from-the-router")])
    head = await _call(RequestIds(inner), [(b"x-request-id", b"mine")])
    assert head[b"x-request-id"] == b"from-the-router"


async def test_an_answer_about_a_stored_request_names_that_request() -> None:
    app = RequestIds(Inner())
    head = await _call(app, [(b"x-request-id", b"this-call")], "/v1/requests/job-9")
    assert head[b"x-request-id"] == b"job-9"
    assert (await _call(app, [], "/v1/requests/job-9"))[b"x-request-id"] == b"job-9"
    assert len((await _call(app, [], "/v1/requests/"))[b"x-request-id"]) == 36


async def test_other_scopes_pass_through_untouched() -> None:
    seen: list[MutableMapping[str, Any]] = []

    async def lifespan(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope)

    scope = {"type": "lifespan"}
    await RequestIds(lifespan)(scope, None, None)  # type: ignore[arg-type]
    assert seen == [scope] and minted_id(scope) is None
