"""Pub/Sub transport settings: upstream's keys, the lease on the time scale, start-up errors."""

from __future__ import annotations

import pytest

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.pubsub_settings import pubsub_settings, topic_entries
from sluiceway.errors import ConfigError

RAW = {
    "project_id": "proj",
    "result_topic_id": "results",
    "claim_lease_ttl_seconds": 30,
    "topics": [{"subscriber_id": "requests-sub"}],
}


def test_settings_scale_the_lease_and_cap_it_at_600_seconds() -> None:
    long = pubsub_settings(BrokerOptions(settings={**RAW, "claim_lease_ttl_seconds": 1200}))
    assert long.lease_seconds == 600
    assert pubsub_settings(BrokerOptions(time_scale=10, settings=RAW)).lease_seconds == 3
    with pytest.raises(ConfigError):
        pubsub_settings(BrokerOptions(settings={"result_topic_id": "r"}))


def test_topic_entries_name_their_config_field() -> None:
    raw = {"topics": [{"subscriber_id": "a"}, "junk", {"subscriber_id": "b"}]}
    assert topic_entries(raw) == [
        ("a", "topics[0].subscriber_id"),
        ("b", "topics[2].subscriber_id"),
    ]
    assert topic_entries({}) == []
