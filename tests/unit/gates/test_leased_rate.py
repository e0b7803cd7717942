"""redis-leased-rate: lease validation, the budget signal, and fail-closed admission."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from sluiceway.errors import BrokerError, ConfigError
from sluiceway.gates.base import Holdings, Verdict
from sluiceway.gates.context import REDIS_GATES_SERVICE
from sluiceway.gates.factory import build_gate
from sluiceway.gates.leased_rate import (
    LEASE_API_VERSION,
    LeasedRateGate,
    LeaseSignal,
    lease_problem,
)

from .helpers import NOW, make_request
from .hub import context

NOW_MS = 1_700_000_000_000


def lease(**changes: str) -> dict[str, str]:
    base = {
        "api_version": LEASE_API_VERSION,
        "pool_id": "teams",
        "max_admission_rps": "5",
        "valid_until_unix_ms": str(NOW_MS + 10_000),
        "decision_id": "d-1",
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({}, ""),
        ({"api_version": "v0"}, "api_version 'v0'"),
        ({"pool_id": "other"}, "lease is for pool 'other'"),
        ({"max_admission_rps": "-1"}, "bad max_admission_rps"),
        ({"max_admission_rps": "inf"}, "bad max_admission_rps"),
        ({"valid_until_unix_ms": str(NOW_MS)}, "lease expired"),
        ({"valid_until_unix_ms": "soon"}, "bad valid_until_unix_ms"),
        ({"decision_id": ""}, "lease lacks decision_id"),
        ({"max_admission_rps": "0"}, "paused (rate 0)"),
    ],
)
def test_lease_problem(changes: dict[str, str], problem: str) -> None:
    assert lease_problem(lease(**changes), pool_id="teams", now_ms=NOW_MS) == problem


class Store:
    def __init__(self, control: Mapping[str, str], *, fail: bool = False) -> None:
        self.control_hash = dict(control)
        self.fail = fail
        self.tokens = 2
        self.takes: list[int] = []

    @property
    def key(self) -> str:
        return "store"

    async def control(self) -> Mapping[str, str]:
        if self.fail:
            raise BrokerError("redis down")
        return self.control_hash

    async def take(self, now_ms: int) -> tuple[bool, str]:
        if self.fail:
            raise BrokerError("redis down")
        self.takes.append(now_ms)
        self.tokens -= 1
        return self.tokens >= 0, "ok" if self.tokens >= 0 else "empty"


class Backend:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.asked: dict[str, object] = {}

    def budget_key(self, address: str, key: str) -> object:
        raise AssertionError("not used")

    def leased_rate(
        self, address: str, *, control_key: str, state_key: str, pool_id: str, burst: float
    ) -> Store:
        self.asked = {"address": address, "control_key": control_key, "pool_id": pool_id}
        return self.store


async def test_signal_reads_one_for_a_valid_lease() -> None:
    store = Store(lease())
    signal = LeaseSignal(store, pool_id="teams", now_ms=lambda: NOW_MS)
    assert (await signal.read()).value == 1.0
    store.control_hash = lease(max_admission_rps="0")
    assert (await signal.read()).value == 0.0
    store.fail = True
    assert (await signal.read()).error == "redis down"


async def test_gate_takes_tokens_and_refuses_without_error() -> None:
    store = Store(lease())
    backend = Backend(store)
    params = {"address": "redis:6379", "control_key": "rate:teams"}
    gate = build_gate("redis-leased-rate", params, context(**{REDIS_GATES_SERVICE: backend}))
    assert isinstance(gate, LeasedRateGate)
    assert backend.asked == {
        "address": "redis:6379",
        "control_key": "rate:teams",
        "pool_id": "teams",
    }
    verdicts = [(await gate.apply(make_request(), Holdings(), NOW)).verdict for _ in range(3)]
    assert verdicts == [Verdict.CONTINUE, Verdict.CONTINUE, Verdict.REFUSE]
    assert store.takes[0] > 1_600_000_000_000  # unscaled wall milliseconds
    store.fail = True
    assert (await gate.apply(make_request(), Holdings(), NOW)).verdict is Verdict.REFUSE
    await gate.refresher.refresh()
    assert await gate.budget(NOW) == 0.0 and gate.blind
    await gate.aclose()


@pytest.mark.parametrize(
    "params",
    [
        {"address": "a"},
        {"address": "a", "control_key": "k", "burst_seconds": "0"},
        {"address": "a", "control_key": "k", "burst_seconds": "inf"},
    ],
)
def test_bad_params(params: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        build_gate(
            "redis-leased-rate", params, context(**{REDIS_GATES_SERVICE: Backend(Store({}))})
        )
