"""Result destination precedence (contracts 2: the request's own route wins)."""

from __future__ import annotations

import json

from sluiceway.gates.base import Decision, Verdict
from sluiceway.processor.record import dropped_result, result_route, result_ttl
from sluiceway.processor.settings import QueueSpec

PLAIN = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw")
ROUTED = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", result_queue_name="q-res")


def test_own_route_beats_the_queue_and_the_default() -> None:
    assert result_route("mailbox:1", ROUTED, "result-list") == "mailbox:1"


def test_queue_route_beats_the_default() -> None:
    assert result_route(None, ROUTED, "result-list") == "q-res"


def test_default_route_last() -> None:
    assert result_route(None, PLAIN, "result-list") == "result-list"
    assert result_route("", PLAIN, "results-list") == "results-list"


def test_a_drop_carries_the_gates_message_or_payload() -> None:
    plain = dropped_result("r", "t", Decision(Verdict.DROP))
    said = dropped_result("r", "t", Decision(Verdict.DROP, "over quota"))
    own = dropped_result("r", "t", Decision(Verdict.DROP, "x", drop_payload='{"code":429}'))
    assert plain.error_code == said.error_code == own.error_code == "GATE_DROPPED"
    assert json.loads(said.payload) == {"error": "over quota"}
    assert own.payload == '{"code":429}' and plain.payload != said.payload


def test_a_coordinator_mailbox_expires_after_an_hour_unless_the_queue_says() -> None:
    assert result_ttl("results:req:t:1", PLAIN) == 3600.0
    assert result_ttl("results-list", PLAIN) is None
    timed = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", result_ttl_seconds=60)
    assert result_ttl("results:req:t:1", timed) == 60
