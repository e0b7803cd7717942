"""Settings of the ``gcp-pubsub`` transport, from upstream's config keys at the time scale."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.pubsub_messages import topic_path
from sluiceway.errors import ConfigError

__all__ = ["MAX_ACK_DEADLINE", "PubSubSettings", "pubsub_settings", "topic_entries"]

MAX_ACK_DEADLINE = 600  # seconds: Pub/Sub's cap on one ack deadline
_REFUSE_DELAY = 10.0  # scaled seconds before a message the gates held comes back (upstream's)


@dataclass(frozen=True, slots=True)
class PubSubSettings:
    """``project``: default project for short names; ``result_topic``: full topic name;
    ``lease_seconds``: ack deadline of a claimed message (wall, 3..600); ``hold_seconds``:
    ack deadline of a pulled, unclaimed message (the delay before a refused message comes
    back); ``max_unclaimed``: unclaimed messages held per subscription (``batch_size``)."""

    project: str
    result_topic: str
    lease_seconds: int = 60
    hold_seconds: int = 10
    max_unclaimed: int = 10


def _number(raw: Mapping[str, object], key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{key} must be a number", field=key)
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{key} must be a number", field=key) from None


def pubsub_settings(options: BrokerOptions) -> PubSubSettings:
    """Settings from the transport config keys (``project_id``, ``result_topic_id``,
    ``batch_size``, ``claim_lease_ttl_seconds``) at the process time scale. Ack deadlines are
    wall seconds: the lease is the claim lease divided by the scale, within 3..600 s."""
    raw = options.settings
    project = str(raw.get("project_id") or "")
    if not project:
        raise ConfigError("gcp-pubsub needs project_id", field="project_id")
    scale = options.time_scale
    lease = _number(raw, "claim_lease_ttl_seconds", 60.0)
    return PubSubSettings(
        project=project,
        result_topic=topic_path(project, str(raw.get("result_topic_id") or "")),
        lease_seconds=int(min(MAX_ACK_DEADLINE, max(3.0, math.ceil(lease / scale)))),
        hold_seconds=int(max(3, math.ceil(_REFUSE_DELAY / scale))),
        max_unclaimed=int(_number(raw, "batch_size", 10)),
    )


def topic_entries(raw: Mapping[str, object]) -> list[tuple[str, str]]:
    """Each topic entry's ``subscriber_id`` with its config field."""
    topics = raw.get("topics")
    if not isinstance(topics, list):
        return []
    return [
        (str(t.get("subscriber_id", "")), f"topics[{i}].subscriber_id")
        for i, t in enumerate(topics)
        if isinstance(t, Mapping)
    ]
