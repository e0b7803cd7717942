"""Result records: pinned JSON for HTTP answers, errors and the 429 drop."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluiceway.errors import WireError
from sluiceway.wire import ErrorCode, ResultRecord, decode_result, encode_result


def test_http_answer_is_pinned() -> None:
    rec = ResultRecord.ok("batch-1-0001", 200, b'{"choices":[]}', request_token="t1")
    assert encode_result(rec) == (
        '{"id":"batch-1-0001","status_code":200,"payload":"{\\"choices\\":[]}",'
        '"request_token":"t1"}'
    )
    assert '"status_code":200' in rec.encode()


def test_deadline_error_matches_contract_example() -> None:
    rec = ResultRecord.error("x", ErrorCode.DEADLINE_EXCEEDED)
    assert encode_result(rec) == (
        '{"id":"x","status_code":0,"payload":"{\\"error\\":\\"deadline exceeded\\"}",'
        '"error_code":"DEADLINE_EXCEEDED","error_message":"deadline exceeded"}'
    )
    assert not rec.is_http


def test_gate_drop_payload_is_upstream_literal() -> None:
    rec = ResultRecord.too_many_requests("o-1", request_token="tok")
    assert rec.payload == '{"error": "Too Many Requests", "code": 429}'
    assert encode_result(rec) == (
        '{"id":"o-1","status_code":0,'
        '"payload":"{\\"error\\": \\"Too Many Requests\\", \\"code\\": 429}",'
        '"error_code":"GATE_DROPPED","error_message":"Too Many Requests","request_token":"tok"}'
    )


def test_upstream_drop_record_without_code_decodes() -> None:
    upstream = '{"id":"o-1","payload":"{\\"error\\": \\"Too Many Requests\\", \\"code\\": 429}"}'
    rec = decode_result(upstream)
    assert rec.payload == ResultRecord.too_many_requests("o-1").payload
    assert rec.status_code == 0 and rec.error_code == ""


def test_a_result_without_an_http_answer_carries_status_code_0() -> None:
    """The guide's checks read ``status_code`` 0 (``jq .status_code``: 0, not null); a Go
    reader of llm-d-async, which leaves the key out there, decodes both as 0, and so do we."""
    upstream = (  # api.NewGateDroppedResult through encoding/json (omitempty), as pushed
        '{"id":"g-1","payload":"{\\"error\\":\\"Pool gating dropped request\\"}",'
        '"error_code":"GATE_DROPPED","error_message":"Pool gating dropped request"}'
    )
    ours = ResultRecord.error("g-1", ErrorCode.GATE_DROPPED, "Pool gating dropped request")
    assert json.loads(encode_result(ours)) == {**json.loads(upstream), "status_code": 0}
    for rec in (ours, ResultRecord.error("d", ErrorCode.DEADLINE_EXCEEDED)):
        doc = json.loads(encode_result(rec))
        assert doc["status_code"] == 0 and '"status_code":0,' in encode_result(rec)
        assert decode_result(encode_result(rec)).status_code == 0
    assert decode_result(upstream) == ours
    assert not decode_result(upstream).is_http


@pytest.mark.parametrize(
    "rec",
    [
        ResultRecord.ok("a", 429, "busy"),
        ResultRecord.error("b", ErrorCode.GATE_ERROR, "Pool gating error: boom", request_token="t"),
        ResultRecord.too_many_requests("c"),
    ],
)
def test_round_trip(rec: ResultRecord) -> None:
    assert decode_result(encode_result(rec)) == rec


@pytest.mark.parametrize("text", ["nope", "[]", '{"id":1}', '{"id":"a","status_code":"200"}'])
def test_bad_records_raise(text: str) -> None:
    with pytest.raises(WireError):
        decode_result(text)


def test_ok_needs_a_status() -> None:
    with pytest.raises(ValueError):
        ResultRecord.ok("a", 0, "")


_TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # no lone surrogates: not UTF-8


@given(_TEXT, st.integers(0, 999), _TEXT, _TEXT, _TEXT, _TEXT)
def test_records_encode_as_the_generic_encoder_would(
    id: str, status: int, payload: str, code: str, message: str, token: str
) -> None:
    """The record is built from parts; it must stay byte-identical to compact JSON."""
    rec = ResultRecord(id, payload, status, code, message, token)
    doc: dict[str, object] = {"id": id, "status_code": status, "payload": payload}
    for key, value in (("error_code", code), ("error_message", message), ("request_token", token)):
        if value:
            doc[key] = value
    assert encode_result(rec) == json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    assert decode_result(encode_result(rec)) == rec
