"""What a gate builder is given: by default one in-process quota store whatever address a gate
names, and no registry, so a combinator built outside ``gates.factory`` says where to build."""

from __future__ import annotations

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.errors import ConfigError
from sluiceway.gates.context import GateContext, memory_stores

NOW = 1_700_000_000.0


async def test_every_address_reaches_the_same_memory_store() -> None:
    stores = memory_stores()
    first, other = stores("redis:6379"), stores("redis-quota:6380")
    assert await first.acquire("quota:team:a", holder="h", limit=1, lease_until=NOW + 60, now=NOW)
    assert await other.count("quota:team:a") == 1
    assert not await other.acquire(
        "quota:team:a", holder="h2", limit=1, lease_until=NOW + 60, now=NOW
    )


async def test_each_context_counts_apart_by_default() -> None:
    first, second = GateContext(clock=VirtualClock()), GateContext(clock=VirtualClock())
    store = first.quota_store("")
    assert await store.acquire("quota:team:a", holder="h", limit=1, lease_until=NOW + 1, now=NOW)
    assert await second.quota_store("").count("quota:team:a") == 0


def test_nested_gates_without_the_registry_name_the_field() -> None:
    ctx = GateContext(clock=VirtualClock())
    with pytest.raises(ConfigError, match=r"sluiceway\.gates\.factory") as caught:
        ctx.build("constant", {}, ctx, field="gates.0.gate_params")
    assert caught.value.field == "gates.0.gate_params"
