"""What the router reads from ``/v1/models`` and decides from it (no network)."""

from __future__ import annotations

import orjson
import pytest

from sluiceway.clock import VirtualClock
from sluiceway.router.pool import EndpointPool
from sluiceway.router.served_models import model_list, read_model_cards, unserved_answer

VLLM_LIST = orjson.dumps(
    {
        "object": "list",
        "data": [
            {"id": "base", "object": "model", "root": "/models/base", "parent": None},
            {"id": "sql-lora", "object": "model", "root": "/adapters/sql", "parent": "base"},
        ],
    }
)


def test_model_cards_include_lora_adapters() -> None:
    cards = read_model_cards(VLLM_LIST)
    assert cards is not None and list(cards) == ["base", "sql-lora"]
    assert cards["sql-lora"]["parent"] == "base"
    assert orjson.loads(model_list(cards.values())) == orjson.loads(VLLM_LIST)


@pytest.mark.parametrize(
    "body", [b"not json", b"[]", b'{"object": "list"}', b'{"data": {"id": "x"}}']
)
def test_a_body_that_is_not_a_model_list_tells_nothing(body: bytes) -> None:
    assert read_model_cards(body) is None


def test_cards_without_an_id_are_skipped_and_an_id_listed_twice_kept_once() -> None:
    body = b'{"data": [{"id": "a", "n": 1}, {"object": "model"}, {"id": ""}, {"id": "a", "n": 2}]}'
    assert read_model_cards(body) == {"a": {"id": "a", "n": 1}}


def _pool() -> EndpointPool:
    pool = EndpointPool(["http://a", "http://b"], VirtualClock())
    for url in pool.members:
        pool.mark(url, True)
    pool.set_models("http://a", frozenset({"alpha", "alpha-lora"}))
    pool.set_models("http://b", frozenset({"beta"}))
    return pool


def test_a_model_no_endpoint_lists_is_vllms_404() -> None:
    pool = _pool()
    answer = unserved_answer("gamma", pool.members.values())
    assert answer is not None and answer.status == 404
    assert orjson.loads(answer.body) == {
        "error": {
            "message": "The model `gamma` does not exist.",
            "type": "NotFoundError",
            "param": "model",
            "code": 404,
        }
    }
    for served in ("alpha", "alpha-lora", "beta", ""):
        assert unserved_answer(served, pool.members.values()) is None


def test_a_model_only_a_down_endpoint_serves_is_503_not_404() -> None:
    pool = _pool()
    pool.mark("http://b", False)
    answer = unserved_answer("beta", pool.members.values())
    assert answer is not None and answer.status == 503
    assert ("x-llm-d-request-dropped-reason", "rejected-no-endpoints") in answer.headers
    pool.update(["http://a"])  # b removed: it no longer counts
    gone = unserved_answer("beta", pool.members.values())
    assert gone is not None and gone.status == 404


def test_unknown_models_or_no_healthy_endpoint_leave_it_to_flow_control() -> None:
    pool = _pool()
    pool.set_models("http://b", None)  # not learned: b may serve anything
    assert unserved_answer("gamma", pool.members.values()) is None
    pool.mark("http://a", False)
    pool.mark("http://b", False)
    assert unserved_answer("gamma", pool.members.values()) is None
