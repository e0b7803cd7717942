"""The llm-d-async Helm chart's values shape (``ap.*``), loadable with ``--config``
(docs/design-rules.md rule 5).

Only the keys that configure the processor take effect; deployment-only keys (resources, image,
monitors, dashboards, affinity, ...) are accepted with a warning; keys whose behaviour sluiceway
lacks (transforms, metrics endpoint auth, the deprecated single-queue keys) are errors.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ConfigDict, Field

from sluiceway.config.params import Duration, FlexInt
from sluiceway.config.strict import CamelModel, join_path
from sluiceway.errors import UnsupportedError

__all__ = ["ApValues", "HelmValues"]

_DEPLOYMENT_ONLY: Final = frozenset(
    {
        "resources",
        "image",
        "imagePullPolicy",
        "imagePullSecrets",
        "podMonitor",
        "modelServerMonitor",
        "prometheusRule",
        "grafana",
        "affinity",
        "otel",
        "tls",
        "replicas",
        "nodeSelector",
        "tolerations",
        "podAnnotations",
        "podLabels",
        "serviceAccount",
        "securityContext",
    }
)

_DEPRECATED_REDIS_KEYS: Final = frozenset(
    {
        "requestPathURL",
        "requestQueueName",
        "resultQueueName",
        "pollIntervalMs",
        "batchSize",
        "gateType",
        "gateParams",
        "queuesConfig",
    }
)


class _Loose(CamelModel):
    """A deployment-only block: its content is the chart's business, not ours."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class RedisValues(_Loose):
    """``ap.redis``: the connection Secret is fine; the deprecated queue keys are not."""

    enabled: bool = False
    url: str = ""

    def check(self, path: str) -> list[str]:
        extra = sorted(set(self.model_extra or {}) & _DEPRECATED_REDIS_KEYS)
        if self.enabled and extra:
            raise UnsupportedError(
                "the deprecated single-queue Redis keys are not supported; use ap.transportConfig",
                field=join_path(path, extra[0]),
            )
        return []


class MetricsValues(_Loose):
    enabled: bool = True
    port: FlexInt = 9090
    secure: bool = False

    def check(self, path: str) -> list[str]:
        if self.secure:
            raise UnsupportedError(
                "metrics endpoint authentication (--metrics-endpoint-auth) is not supported",
                field=join_path(path, "secure"),
            )
        return []


class HealthValues(_Loose):
    """``ap.health``: the port is used; probe timings belong to the chart."""

    port: FlexInt = 8081


class UrlSecret(_Loose):
    url: str = ""


class ApValues(CamelModel):
    """``ap.*``. ``transportConfig``, ``workerPools`` and ``requestMergePolicyConfig`` hold the
    same documents as the processor's files; they are validated by the processor loaders."""

    COSMETIC = _DEPLOYMENT_ONLY | {"urlSecret", "gcpPubSub"}

    igw_base_url: str = Field(default="", alias="igwBaseURL")
    concurrency: FlexInt = Field(default=64, gt=0)
    drain_timeout: Duration = 120.0
    prometheus_url: str = Field(default="", alias="prometheusURL")
    prometheus_cache_ttl: Duration = Field(default=5.0, alias="prometheusCacheTTL")
    feasibility: bool = True
    service_time_prior: Duration = Field(default=0.0, ge=0)
    service_time_quantile: float = Field(default=0.5, gt=0, le=1)
    overload_sojourn_target: Duration = Field(default=5.0, ge=0)
    overload_interval: Duration = Field(default=10.0, ge=0)
    worker_pools: list[Any] = Field(default_factory=list)
    transform_config: dict[str, Any] = Field(default_factory=dict)
    request_merge_policy_config: dict[str, Any] = Field(default_factory=dict)
    transport: str = ""
    transport_config: dict[str, Any] = Field(default_factory=dict)
    transport_config_watch_interval: Duration = 0.0
    message_queue_impl: str = ""
    redis: RedisValues = Field(default_factory=RedisValues)
    gcp_pub_sub: _Loose | None = None
    metrics: MetricsValues = Field(default_factory=MetricsValues)
    url_secret: UrlSecret | None = None
    resources: Any = None
    image: Any = None
    image_pull_policy: Any = None
    image_pull_secrets: Any = None
    pod_monitor: Any = None
    model_server_monitor: Any = None
    prometheus_rule: Any = None
    grafana: Any = None
    affinity: Any = None
    otel: Any = None
    tls: Any = None
    health: HealthValues = Field(default_factory=HealthValues)
    replicas: Any = None
    node_selector: Any = None
    tolerations: Any = None
    pod_annotations: Any = None
    pod_labels: Any = None
    service_account: Any = None
    security_context: Any = None

    def check(self, path: str) -> list[str]:
        if self.transform_config:
            raise UnsupportedError(
                "request body transforms are not supported",
                field=join_path(path, "transformConfig"),
            )
        if self.message_queue_impl and not self.transport:
            raise UnsupportedError(
                "the deprecated messageQueueImpl surface is not supported; set ap.transport",
                field=join_path(path, "messageQueueImpl"),
            )
        if self.igw_base_url:
            where = join_path(path, "igwBaseURL")
            return [f"{where}: single-queue mode is not supported; set igw_base_url per queue"]
        return []


class HelmValues(CamelModel):
    """A values file of the llm-d-async chart: everything lives under ``ap``."""

    COSMETIC = frozenset({"nameOverride", "fullnameOverride", "global"})

    ap: ApValues
    name_override: Any = None
    fullname_override: Any = None
    global_: Any = Field(default=None, alias="global")
