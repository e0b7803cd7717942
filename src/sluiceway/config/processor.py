"""Processor documents in llm-d-async's formats (docs/configuration.md).

The transport config (``--transport-config(-file)``), the worker pools file
(``--pool-config-file``) and the merge policy file (``--request-merge-policy-config-file``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from sluiceway.config.gates import check_gate
from sluiceway.config.params import FlexFloat, FlexInt, JsonObject
from sluiceway.config.redis_address import parse_redis_address
from sluiceway.config.strict import Loaded, StrictModel, join_path, validate_model
from sluiceway.config.urls import check_sqlite_path
from sluiceway.errors import ConfigError, UnsupportedError
from sluiceway.wire.lanes import LANE_KEYS, TIERS

__all__ = [
    "DEFAULT_POOL_ID",
    "TRANSPORTS",
    "MergePolicyConfig",
    "MergePolicyParams",
    "PoolConfig",
    "QueueConfig",
    "TransportConfig",
    "load_merge_policy",
    "load_pools",
    "load_transport_config",
]

TRANSPORTS: Final = ("redis-sortedset", "gcp-pubsub", "sqlite", "postgres", "memory")
_UNSUPPORTED_TRANSPORTS: Final = {
    "redis-pubsub": "the redis-pubsub transport (use redis-sortedset)"
}
DEFAULT_POOL_ID: Final = "default"
_HEADER_TOKEN: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

# Keys each transport reads; a key of another transport is an error naming the transport.
_TRANSPORT_KEYS: Final[dict[str, frozenset[str]]] = {
    "redis-sortedset": frozenset(
        {
            "url",
            "mode",
            "addrs",
            "master_name",
            "retry_queue_name",
            "result_queue_name",
            "poll_interval_ms",
            "batch_size",
            "enable_tracing",
            "claim_lease_ttl_seconds",
            "claim_reclaim_interval_ms",
            "queues",
        }
    ),
    "gcp-pubsub": frozenset(
        {
            "project_id",
            "result_topic_id",
            "batch_size",
            "topics",
            "poll_interval_ms",
            "claim_lease_ttl_seconds",
        }
    ),
    "sqlite": frozenset(
        {
            "path",
            "retry_queue_name",
            "result_queue_name",
            "poll_interval_ms",
            "batch_size",
            "claim_lease_ttl_seconds",
            "claim_reclaim_interval_ms",
            "queues",
        }
    ),
    # upstream's sql transport keys, plus the redis claim keys
    "postgres": frozenset(
        {
            "url",
            "retry_queue_name",
            "result_queue_name",
            "poll_interval_ms",
            "batch_size",
            "lease_ttl_seconds",
            "handoff_timeout_seconds",
            "pool_size",
            "enable_tracing",
            "claim_lease_ttl_seconds",
            "claim_reclaim_interval_ms",
            "queues",
        }
    ),
    "memory": frozenset(
        {
            "retry_queue_name",
            "result_queue_name",
            "batch_size",
            "claim_lease_ttl_seconds",
            "claim_reclaim_interval_ms",
            "queues",
        }
    ),
}


class _GateCarrier(StrictModel):
    """A queue or pool: ``gate_type`` + ``gate_params`` (object or JSON string)."""

    gate_type: str = ""
    gate_params: JsonObject = Field(default_factory=dict)

    def check(self, path: str) -> list[str]:
        return check_gate(self.gate_type, self.gate_params, field=path)


class QueueConfig(_GateCarrier):
    """One queue (``queues[]``) or Pub/Sub subscription (``topics[]``).

    ``id`` defaults to ``queue_name`` (or ``subscriber_id``) and labels the queue's metrics.
    ``labels`` are copied into each entry's ``internal.labels`` (``tier``). sluiceway's own keys
    (docs/design-rules.md rule 27): ``max_attempts`` (None = unlimited), ``max_connect_errors``
    (None = retry connection errors while the deadline allows), ``connect_backoff_cap_seconds``
    (10), ``resume``.
    """

    id: str = ""
    queue_name: str = ""
    subscriber_id: str = ""
    igw_base_url: str
    request_path_url: str = "/v1/completions"
    inference_objective: str = ""
    worker_pool_id: str = DEFAULT_POOL_ID
    result_queue_name: str = ""
    result_ttl_seconds: FlexInt | None = Field(default=None, ge=0)
    labels: dict[str, str] = Field(default_factory=dict)
    max_attempts: FlexInt | None = Field(default=None, gt=0)
    max_connect_errors: FlexInt | None = Field(default=None, gt=0)
    connect_backoff_cap_seconds: FlexFloat = Field(default=10.0, gt=0)
    resume: bool = False

    @model_validator(mode="before")
    @classmethod
    def _default_id(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and not data.get("id"):
            return {**data, "id": data.get("queue_name") or data.get("subscriber_id") or ""}
        return data

    @field_validator("igw_base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    def check(self, path: str) -> list[str]:
        warnings = super().check(path)
        tier = self.labels.get("tier")
        if tier is not None and tier not in TIERS:
            warnings.append(
                f"{join_path(path, 'labels', 'tier')}: unknown tier {tier!r} "
                f"(known: {', '.join(TIERS)}); its requests go to the batch lanes"
            )
        return warnings


class TransportConfig(StrictModel):
    """A transport config. ``transport`` is set by the loader from ``--transport``.

    redis-sortedset: ``url`` (else env ``REDIS_URL``), ``mode``, ``addrs``, ``master_name``,
    names, ``poll_interval_ms`` (1000), ``batch_size`` (10 = entries examined per poll),
    claim lease (300 s) and reclaim interval (15000 ms), ``queues``. gcp-pubsub:
    ``project_id``, ``result_topic_id``, ``batch_size``, ``topics``. sqlite: ``path`` plus the
    redis queue keys; postgres: ``url`` (else env ``DATABASE_URL`` or ``SQL_URL``), the queue
    keys, ``lease_ttl_seconds`` (the claim lease) and ``handoff_timeout_seconds`` (ignored: no
    partitions to hand off), ``pool_size`` (connections per processor, 10); memory: the queue
    keys only.
    """

    COSMETIC = frozenset({"enable_tracing", "handoff_timeout_seconds"})

    transport: Literal["redis-sortedset", "gcp-pubsub", "sqlite", "postgres", "memory"] = (
        "redis-sortedset"
    )
    url: str = ""
    mode: Literal["standalone", "cluster", "sentinel"] = "standalone"
    addrs: list[str] = Field(default_factory=list)
    master_name: str = ""
    retry_queue_name: str = "retry-sortedset"
    result_queue_name: str = "result-list"
    poll_interval_ms: FlexInt = Field(default=1000, ge=0)
    batch_size: FlexInt = Field(default=10, gt=0)
    enable_tracing: bool = False
    claim_lease_ttl_seconds: FlexFloat = Field(default=300.0, gt=0)
    claim_reclaim_interval_ms: FlexInt = Field(default=15000, gt=0)
    queues: list[QueueConfig] = Field(default_factory=list)
    project_id: str = ""
    result_topic_id: str = ""
    topics: list[QueueConfig] = Field(default_factory=list)
    path: str = "sluiceway.db"
    handoff_timeout_seconds: FlexInt = Field(default=900, ge=0)
    pool_size: FlexInt = Field(default=10, gt=0)

    @field_validator("poll_interval_ms")
    @classmethod
    def _zero_means_default(cls, value: int) -> int:
        return value or 1000

    @property
    def all_queues(self) -> list[QueueConfig]:
        """The queues (or Pub/Sub subscriptions) this transport reads."""
        return self.topics if self.transport == "gcp-pubsub" else self.queues

    @model_validator(mode="after")
    def _consistent(self) -> TransportConfig:
        if self.mode == "sentinel" and not self.master_name:
            raise ValueError("master_name is required with mode sentinel")
        if self.addrs and self.mode == "standalone":
            raise ValueError("addrs is only used with mode cluster or sentinel")
        if self.transport == "postgres" and not self.url:
            raise ValueError("postgres needs url (or env DATABASE_URL)")
        if self.transport == "gcp-pubsub" and not (self.project_id and self.result_topic_id):
            raise ValueError("gcp-pubsub needs project_id and result_topic_id")
        return self

    def _check_address(self, path: str) -> None:
        if self.transport == "redis-sortedset" and self.url:
            sentinel = self.mode == "sentinel"
            parse_redis_address(self.url, field=join_path(path, "url"), sentinel_elsewhere=sentinel)
        for index, addr in enumerate(self.addrs):
            if "://" in addr:
                raise ConfigError(
                    "give host:port, not a URL", field=join_path(path, "addrs", index)
                )
        if self.transport == "sqlite":
            check_sqlite_path(self.path, field=join_path(path, "path"))

    def check(self, path: str) -> list[str]:
        self._check_address(path)
        names = "subscriber_id" if self.transport == "gcp-pubsub" else "queue_name"
        key = "topics" if self.transport == "gcp-pubsub" else "queues"
        seen_ids: set[str] = set()
        seen_names: set[str] = set()
        for index, queue in enumerate(self.all_queues):
            where = join_path(path, key, index)
            name = getattr(queue, names)
            if not name:
                raise ConfigError("required key missing", field=join_path(where, names))
            if queue.id in seen_ids or name in seen_names:
                raise ConfigError(f"duplicate queue {queue.id!r}", field=where)
            seen_ids.add(queue.id)
            seen_names.add(name)
        return []


class PoolConfig(_GateCarrier):
    """A worker pool: ``workers`` workers (> 0) and an optional pool gate."""

    id: str = Field(min_length=1)
    workers: FlexInt = Field(gt=0)


class MergePolicyParams(StrictModel):
    """Merge policy parameters of llm-d-async's ``tier-priority`` and ``random-robin``.

    ``lane_objectives`` maps lane keys (``sluiceway.wire.lanes``) to objective names;
    ``fairness_header`` "" disables fairness stamping; ``priority_header`` "" (default) stamps no
    lane index.
    """

    lane_objectives: dict[str, str] = Field(default_factory=dict)
    objective_header: str = "x-llm-d-inference-objective"
    fairness_header: str = "x-llm-d-inference-fairness-id"
    fairness_attribute: str = "userid"
    tier_label: str = "tier"
    priority_header: str = ""

    @field_validator("lane_objectives")
    @classmethod
    def _lane_keys(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(LANE_KEYS))
        if unknown:
            raise ValueError(f"unknown lane key {unknown[0]!r} (lanes: {', '.join(LANE_KEYS)})")
        return value

    @field_validator("objective_header", "fairness_header", "priority_header")
    @classmethod
    def _header_name(cls, value: str) -> str:
        if value and not _HEADER_TOKEN.match(value):
            raise ValueError(f"{value!r} is not a valid header name")
        return value.lower()


class MergePolicyConfig(StrictModel):
    """``{"type": "tier-priority" | "random-robin", "parameters": {...}}``."""

    type: Literal["tier-priority", "random-robin"] = "random-robin"
    parameters: MergePolicyParams = Field(default_factory=MergePolicyParams)

    def check(self, path: str) -> list[str]:
        if self.type != "random-robin":
            return []
        lane_keys = {"lane_objectives", "objective_header", "tier_label", "priority_header"}
        used = sorted(self.parameters.model_fields_set & lane_keys)
        return [f"{join_path(path, 'parameters', k)}: unused by random-robin" for k in used]


def load_transport_config(
    data: Any, transport: str, *, env: Mapping[str, str] | None = None, path: str = ""
) -> Loaded[TransportConfig]:
    """Validate a transport config for ``transport``; ``url`` falls back to env ``REDIS_URL``."""
    if transport in _UNSUPPORTED_TRANSPORTS:
        raise UnsupportedError(f"{_UNSUPPORTED_TRANSPORTS[transport]} is not supported")
    if transport not in TRANSPORTS:
        raise ConfigError(f"unknown transport {transport!r} (known: {', '.join(TRANSPORTS)})")
    if not isinstance(data, Mapping):
        raise ConfigError("the transport config must be a JSON object", field=path or None)
    for key in data:
        if key in _TRANSPORT_KEYS[transport]:
            continue
        known = any(key in keys for keys in _TRANSPORT_KEYS.values())
        reason = f"not a key of transport {transport}" if known else "unknown key"
        raise ConfigError(reason, field=join_path(path, str(key)))
    values = dict(data)
    if transport == "redis-sortedset" and not values.get("url"):
        values["url"] = (env or {}).get("REDIS_URL", "")
    if transport == "postgres":
        values = _postgres_values(values, env or {})
    return validate_model(TransportConfig, {**values, "transport": transport}, path=path)


def _postgres_values(values: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Upstream's sql transport spellings: its lease is our claim lease; result-sql default."""
    if not values.get("url"):
        values["url"] = env.get("DATABASE_URL") or env.get("SQL_URL") or ""
    lease = values.pop("lease_ttl_seconds", None)
    if lease is not None:
        values.setdefault("claim_lease_ttl_seconds", lease)
    values.setdefault("result_queue_name", "result-sql")
    return values


def load_pools(data: Any, *, path: str = "") -> Loaded[list[PoolConfig]]:
    """Validate a pools file (a JSON array); pool ids must be unique."""
    if not isinstance(data, list):
        raise ConfigError("the pools file must be a JSON array", field=path or None)
    pools: list[PoolConfig] = []
    warnings: list[str] = []
    for index, item in enumerate(data):
        loaded = validate_model(PoolConfig, item, path=join_path(path, index))
        if any(p.id == loaded.value.id for p in pools):
            raise ConfigError(
                f"duplicate pool id {loaded.value.id!r}", field=join_path(path, index)
            )
        pools.append(loaded.value)
        warnings.extend(loaded.warnings)
    return Loaded(pools, tuple(warnings))


def load_merge_policy(data: Any, *, path: str = "") -> Loaded[MergePolicyConfig]:
    """Validate a merge policy document; ``{}`` means random-robin with defaults."""
    return validate_model(MergePolicyConfig, data or {}, path=path)
