"""Outcome -> HTTP mapping (docs/design-rules.md rule 22) and the light contracts module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sluiceway.flowcontrol import DropReason, Finalized, Outcome
from sluiceway.flowcontrol.base import DropStatus, FlowKey, Request
from sluiceway.wire import headers


def answer(outcome: Outcome, *, empty: bool = False, down: bool = False) -> tuple[int, str | None]:
    got = Finalized("r", outcome, "t", 0, 0, 0.0, pool_empty=empty, shutting_down=down).http()
    assert got is not None
    return got.status, None if got.reason is None else str(got.reason)


@pytest.mark.parametrize(
    ("outcome", "empty", "down", "expected"),
    [
        (Outcome.REJECTED_CAPACITY, False, False, (429, "rejected-saturated")),
        (Outcome.REJECTED_NO_ENDPOINTS, True, False, (503, "rejected-no-endpoints")),
        (Outcome.EVICTED_TTL, False, False, (429, "rejected-ttl-expired")),
        (Outcome.EVICTED_TTL, True, False, (503, "rejected-no-endpoints")),
        (Outcome.EVICTED_NO_ENDPOINTS, True, False, (503, "rejected-no-endpoints")),
        (Outcome.EVICTED_CONTEXT_CANCELLED, False, False, (503, "rejected-context-cancelled")),
        (Outcome.EVICTED_OTHER, False, True, (503, "rejected-shutting-down")),
        (Outcome.REJECTED_OTHER, False, True, (503, "rejected-shutting-down")),
        (Outcome.REJECTED_OTHER, False, False, (500, None)),
    ],
)
def test_http_mapping(
    outcome: Outcome, empty: bool, down: bool, expected: tuple[int, str | None]
) -> None:
    assert answer(outcome, empty=empty, down=down) == expected


def test_dispatched_has_no_http_answer() -> None:
    assert Finalized("r", Outcome.DISPATCHED, "t", 0, 0, 0.0).http() is None


def test_labels_and_header_values_are_upstream_exact() -> None:
    assert [o.value for o in Outcome] == [
        "Dispatched",
        "RejectedCapacity",
        "RejectedNoEndpoints",
        "RejectedOther",
        "EvictedTTL",
        "EvictedNoEndpoints",
        "EvictedContextCancelled",
        "EvictedOther",
    ]
    assert DropReason.EVICTED == "evicted"


def test_drop_reasons_are_the_wire_values() -> None:
    assert tuple(DropReason) == headers.DROPPED_REASONS


def test_an_answer_is_a_status_and_a_reason() -> None:
    got = Finalized("r", Outcome.REJECTED_CAPACITY, "t", 0, 0, 0.0).http()
    assert got == DropStatus(429, DropReason.SATURATED)
    assert Finalized("r", Outcome.DISPATCHED, "t", 0, 0, 0.0).http() is None


def test_flow_key_string_and_request_defaults() -> None:
    req = Request("r")
    assert req.flow_key == FlowKey("default-flow", 0) and str(req.flow_key) == "default-flow:0"


def test_base_imports_only_the_standard_library() -> None:
    code = (
        "import sys, sluiceway.flowcontrol.base as b; "
        "bad = [m for m in ('aiohttp', 'redis', 'starlette', 'pydantic') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
