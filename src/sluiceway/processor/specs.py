"""Runtime settings of a processor, built once from the config documents and flags.

Durations are scaled seconds (one time scale for the whole system, ``--time-scale``). The config
models (``sluiceway.config``) say what operators write; these frozen dataclasses say what the
runtime needs, passed whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sluiceway.config.processor_settings import default_of
from sluiceway.processor.headers import HeaderPolicy
from sluiceway.processor.lane_scheduler import Ordering
from sluiceway.processor.outcome import RetryPolicy
from sluiceway.signals.settings import PrometheusSettings

__all__ = [
    "DEFAULT_BACKLOG_INTERVAL",
    "DEFAULT_REQUEST_PATH",
    "MergeSpec",
    "PoolSpec",
    "ProcessorSpec",
    "QueueSpec",
]

DEFAULT_REQUEST_PATH = "/v1/completions"  # upstream's, also for an empty request_path_url
DEFAULT_BACKLOG_INTERVAL = 15.0  # scaled seconds between backlog polls (upstream's default)


@dataclass(frozen=True)
class QueueSpec:
    """One queue: where its requests go and how they are gated and retried."""

    id: str
    queue_name: str
    igw_base_url: str
    request_path: str = DEFAULT_REQUEST_PATH
    inference_objective: str = ""
    pool_id: str = "default"
    result_queue_name: str = ""
    result_ttl_seconds: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    gate_type: str = ""
    gate_params: Mapping[str, object] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    resume: bool = False  # continue an evicted completion from its generated text


@dataclass(frozen=True)
class PoolSpec:
    """A worker pool: ``workers`` concurrent requests and an optional pool gate."""

    id: str = "default"
    workers: int = 64
    gate_type: str = ""
    gate_params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class MergeSpec:
    """The merge policy: lane ordering and what is stamped on requests."""

    ordering: Ordering = "random-robin"
    headers: HeaderPolicy = field(default_factory=HeaderPolicy)
    tier_label: str = "tier"


@dataclass(frozen=True)
class ProcessorSpec:
    """Everything the runtime needs (durations in scaled seconds).

    ``batch_size``: entries one poll examines without admitting before it stops scanning;
    ``buffer_per_queue``: ready requests held per queue (None = about workers / queues + 1);
    ``gate_wait_timeout``: how long a parked worker holds a request (0 = until its deadline);
    ``prometheus``: where metric gates query and how often their signals refresh.
    """

    queues: Sequence[QueueSpec]
    pools: Sequence[PoolSpec] = (PoolSpec(),)
    merge: MergeSpec = field(default_factory=MergeSpec)
    result_queue_name: str = "result-list"
    batch_size: int = 10
    poll_interval: float = 1.0
    claim_lease: float = 300.0
    reclaim_interval: float = 15.0
    # declared once with their flags (sluiceway.config.processor_settings); the runtime follows them
    request_timeout: float = default_of("request_timeout")
    drain_timeout: float = default_of("drain_timeout")
    gate_wait_timeout: float = default_of("gate_wait_timeout")
    feasibility: bool = default_of("feasibility")
    service_time_prior: float = default_of("service_time_prior")
    service_time_quantile: float = default_of("service_time_quantile")
    overload_sojourn_target: float = default_of("overload_sojourn_target")
    overload_interval: float = default_of("overload_interval")
    backlog_interval: float = DEFAULT_BACKLOG_INTERVAL
    cancel_check_interval: float = 0.5
    buffer_per_queue: int | None = None
    prometheus: PrometheusSettings = field(default_factory=PrometheusSettings)

    def pool(self, pool_id: str) -> PoolSpec:
        for pool in self.pools:
            if pool.id == pool_id:
                return pool
        raise KeyError(pool_id)
