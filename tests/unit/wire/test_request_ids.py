"""Which ``x-request-id`` a request goes by: the caller's when kept, else a fresh UUID4."""

from __future__ import annotations

import re

import pytest

from sluiceway.wire.request_ids import MAX_REQUEST_ID, echoable, new_request_id, request_id_for

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.mark.parametrize(
    "value",
    ["a", "req_01HZ.x:y/z~!", "premium:" + "a" * 128, "x" * MAX_REQUEST_ID],
)
def test_visible_ascii_up_to_the_limit_is_kept(value: str) -> None:
    assert echoable(value)
    assert request_id_for(value) == (value, True)


@pytest.mark.parametrize(
    "value",
    [None, "", "x" * (MAX_REQUEST_ID + 1), "has space", "tab\there", "new\nline", "caf\u00e9"],
)
def test_anything_else_is_replaced_by_a_fresh_uuid(value: str | None) -> None:
    assert not echoable(value)
    rid, own = request_id_for(value)
    assert not own and UUID4.match(rid)


def test_fresh_ids_differ_and_pass_the_coordinators_mailbox_rule() -> None:
    ids = {new_request_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[a-zA-Z0-9-]{1,128}", rid) for rid in ids)
