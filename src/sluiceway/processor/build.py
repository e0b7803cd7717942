"""From the configuration documents to a running processor's parts.

:func:`runtime_settings` maps the validated config
(``sluiceway.config.processor_settings``) onto the runtime's
:class:`~sluiceway.processor.specs.ProcessorSpec`; :func:`open_backend` opens the broker and the
quota stores its transport implies.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.quota_stores import QuotaStores, open_quota_stores
from sluiceway.broker.redis_gates import RedisGateClients
from sluiceway.clock import Clock
from sluiceway.config.processor import MergePolicyConfig, QueueConfig
from sluiceway.config.processor_settings import ProcessorSettings as ProcessorConfig
from sluiceway.processor.headers import HeaderPolicy
from sluiceway.processor.outcome import RetryPolicy
from sluiceway.processor.specs import (
    DEFAULT_BACKLOG_INTERVAL,
    DEFAULT_REQUEST_PATH,
    MergeSpec,
    PoolSpec,
    ProcessorSpec,
    QueueSpec,
)
from sluiceway.signals.settings import PrometheusSettings

__all__ = ["Backend", "merge_spec", "open_backend", "queue_spec", "runtime_settings"]


def queue_spec(queue: QueueConfig, index: int, key: str = "queues") -> QueueSpec:
    """One queue's runtime settings."""
    ttl = queue.result_ttl_seconds
    return QueueSpec(
        id=queue.id,
        queue_name=queue.queue_name or queue.subscriber_id,
        igw_base_url=queue.igw_base_url,
        # Empty means upstream's default path, as upstream treats it.
        request_path=queue.request_path_url or DEFAULT_REQUEST_PATH,
        inference_objective=queue.inference_objective,
        pool_id=queue.worker_pool_id,
        result_queue_name=queue.result_queue_name,
        result_ttl_seconds=None if ttl is None else float(ttl),
        labels=dict(queue.labels),
        gate_type=queue.gate_type,
        gate_params=dict(queue.gate_params),
        retry=RetryPolicy(
            queue.max_attempts, queue.max_connect_errors, queue.connect_backoff_cap_seconds
        ),
        resume=queue.resume,
    )


def merge_spec(policy: MergePolicyConfig) -> MergeSpec:
    """The merge policy's ordering and stamping."""
    params = policy.parameters
    headers = HeaderPolicy(
        stamp_lanes=policy.type == "tier-priority",
        lane_objectives=dict(params.lane_objectives),
        objective_header=params.objective_header,
        fairness_header=params.fairness_header,
        fairness_attribute=params.fairness_attribute,
        priority_header=params.priority_header,
    )
    return MergeSpec(ordering=policy.type, headers=headers, tier_label=params.tier_label)


def runtime_settings(
    config: ProcessorConfig, *, backlog_interval: float = DEFAULT_BACKLOG_INTERVAL
) -> ProcessorSpec:
    """The runtime settings of a validated processor configuration (seconds are scaled);
    ``backlog_interval`` from ``--metrics-backlog-poll-interval`` (0 disables the poller)."""
    tc = config.transport_config
    key = "topics" if tc.transport == "gcp-pubsub" else "queues"
    return ProcessorSpec(
        queues=tuple(queue_spec(q, i, key) for i, q in enumerate(tc.all_queues)),
        pools=tuple(
            PoolSpec(p.id, p.workers, p.gate_type, dict(p.gate_params)) for p in config.pools
        ),
        merge=merge_spec(config.merge_policy),
        result_queue_name=tc.result_topic_id if key == "topics" else tc.result_queue_name,
        batch_size=tc.batch_size,
        poll_interval=tc.poll_interval_ms / 1000.0,
        claim_lease=tc.claim_lease_ttl_seconds,
        reclaim_interval=tc.claim_reclaim_interval_ms / 1000.0,
        request_timeout=config.request_timeout,
        drain_timeout=config.drain_timeout,
        gate_wait_timeout=config.gate_wait_timeout,
        feasibility=config.feasibility,
        service_time_prior=config.service_time_prior,
        service_time_quantile=config.service_time_quantile,
        overload_sojourn_target=config.overload_sojourn_target,
        overload_interval=config.overload_interval,
        backlog_interval=backlog_interval,
        prometheus=PrometheusSettings(
            url=config.prometheus_url, cache_ttl=config.prometheus_cache_ttl
        ),
    )


@dataclass
class Backend:
    """An open broker and the quota stores of its transport; close both with :meth:`aclose`."""

    broker: Broker
    quota_stores: QuotaStores
    redis_gates: RedisGateClients

    async def aclose(self) -> None:
        await self.redis_gates.aclose()
        await self.quota_stores.aclose()
        await self.broker.aclose()


async def open_backend(
    config: ProcessorConfig, *, time_scale: float, clock: Clock | None = None
) -> Backend:
    """Open the transport's broker and quota stores."""
    tc = config.transport_config
    options = BrokerOptions(
        url=tc.url or None,
        time_scale=time_scale,
        settings=tc.model_dump(exclude={"queues"}),
        url_aliases=config.url_aliases,
        clock=clock,
    )
    broker = await open_broker(config.transport, options)
    try:
        check = getattr(broker, "check_permissions", None)  # Redis: the ACL, before ready
        if check is not None:
            await check()
        stores = await open_quota_stores(config.transport, broker, options)
    except BaseException:
        await broker.aclose()
        raise
    return Backend(broker, stores, RedisGateClients(processor_url=tc.url or None))
