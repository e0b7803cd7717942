"""The coordinator picks its broker from the scheme of its ``redis_url`` and names the field when
it cannot (starting and mounting it runs in tests/integration/coordinator/test_scenario_i.py)."""

from __future__ import annotations

import pytest

from sluiceway.coordinator.server import transport_of
from sluiceway.errors import ConfigError


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("redis://redis:6379/0", "redis-sortedset"),
        ("rediss://user:pw@redis:6380/0", "redis-sortedset"),
        ("memory://", "memory"),
        ("sqlite:///var/lib/queue.db", "sqlite"),
        ("postgres://pg/db", "postgres"),
        ("postgresql://pg/db", "postgres"),
    ],
)
def test_the_scheme_names_the_broker(url: str, transport: str) -> None:
    assert transport_of(url) == transport


@pytest.mark.parametrize("url", ["foo", "http://redis:6379", "redis:6379", ""])
def test_anything_else_is_a_config_error_naming_redis_url(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        transport_of(url)
    assert caught.value.field == "redis_url"
    assert "redis://" in str(caught.value)
