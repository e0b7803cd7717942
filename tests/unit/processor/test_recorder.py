"""Result destination precedence: the request's own route wins."""

from __future__ import annotations

from sluiceway.processor.recorder import result_route, result_ttl
from sluiceway.processor.specs import QueueSpec

PLAIN = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw")
ROUTED = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", result_queue_name="q-res")


def test_own_route_beats_the_queue_and_the_default() -> None:
    assert result_route("mailbox:1", ROUTED, "result-list") == "mailbox:1"


def test_queue_route_beats_the_default() -> None:
    assert result_route(None, ROUTED, "result-list") == "q-res"


def test_default_route_last() -> None:
    assert result_route(None, PLAIN, "result-list") == "result-list"
    assert result_route("", PLAIN, "results-list") == "results-list"


def test_a_coordinator_mailbox_expires_after_an_hour_unless_the_queue_says() -> None:
    plain = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw")
    timed = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", result_ttl_seconds=60)
    assert result_ttl("results:req:t:1", plain) == 3600.0
    assert result_ttl("results-list", plain) is None
    assert result_ttl("results:req:t:1", timed) == 60
