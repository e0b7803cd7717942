"""fastjson: orjson's speed, the standard library's values and errors."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluiceway import fastjson
from sluiceway.wire.envelope import EntryError, decode_envelope


def same(a: Any, b: Any) -> bool:
    """Equal in value and in type all the way down (``1`` is not ``1.0``; NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_VALUES)
def test_loads_reads_what_json_reads(value: Any) -> None:
    text = json.dumps(value)
    assert same(fastjson.loads(text), json.loads(text))
    assert same(fastjson.loads(text.encode("utf-8", "surrogatepass")), json.loads(text))


@pytest.mark.parametrize(
    "text",
    ["", "{", "[1,]", '{"a":1,}', "nul", '"\\x"', "\ufeff{}", "{} []", b"\xff\xfe", "[" * 5 + "1"],
)
def test_loads_raises_what_json_raises(text: str | bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        fastjson.loads(text)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


def test_loads_keeps_integers_beyond_64_bits_exact() -> None:
    big = 2**70 + 1
    assert fastjson.loads(f'{{"seed": {big}}}') == {"seed": big}
    assert fastjson.loads(b"[-9223372036854775809]") == [-(2**63) - 1]


@given(_VALUES)
def test_dumps_reads_back_as_json_would(value: Any) -> None:
    expected = json.loads(json.dumps(value))
    got = json.loads(fastjson.dumps(value))
    if not _has_non_finite(value):
        assert same(got, expected)
    assert b", " not in fastjson.dumps([1, 2]) and b": " not in fastjson.dumps({"a": 1})


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


def test_dumps_takes_what_orjson_refuses_to_the_standard_encoder() -> None:
    assert fastjson.dumps({"seed": 2**70}) == b'{"seed":%d}' % 2**70
    assert fastjson.dumps({1: "x"}) == b'{"1":"x"}'
    assert fastjson.dumps({"p": "h\u00e9"}) == '{"p":"h\u00e9"}'.encode()
    assert fastjson.dumps(float("nan")) == b"null"


@pytest.mark.parametrize(
    "member",
    [
        '{"internal":{},"request_kind":"plain","data":{"id":"a","deadline":1.5,"payload":{}}}',
        '{"data":{"id":"b","deadline":2,"payload":{"seed":123456789012345678901}}}',
        '{"data":{"id":"c","deadline":NaN}}',
        '{"data":{"id":"d"',
        "[]",
    ],
)
def test_envelopes_decode_alike_with_either_parser(member: str) -> None:
    def decode(loads: Any) -> Any:
        try:
            return decode_envelope(member, loads=loads)
        except EntryError as exc:
            return ("error", exc.message, exc.entry_id)

    assert decode(fastjson.loads) == decode(json.loads)
