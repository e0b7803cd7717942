"""The coordinator's config file (docs/design-rules.md rule 29).

The whole upstream file loads: ``server.*``, ``gateway.address`` (the passthrough target),
``pipeline`` (``async-broker`` first; later steps accepted and ignored with a warning) and the
``async-broker`` parameters. A file holding only the parameter block loads too. sluiceway adds
``upstream_url`` (overrides ``gateway.address``), ``api_keys`` (key -> tenant) and
``patience`` (deadlines cut to each tenant's learned patience).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from sluiceway.config.params import Duration, FlexFloat, FlexInt
from sluiceway.config.redis_address import parse_redis_address
from sluiceway.config.strict import Loaded, StrictModel, join_path, validate_model
from sluiceway.config.urls import broker_transport, mask_credentials
from sluiceway.errors import ConfigError, UnsupportedError
from sluiceway.wire import headers

__all__ = [
    "AsyncBrokerParams",
    "CoordinatorConfig",
    "load_coordinator_config",
]

BROKER_STEP: Final = "async-broker"
_FORBIDDEN_FORWARD: Final = frozenset(
    {headers.ASYNC_MODE, *headers.OBJECTIVE_ALIASES, *headers.FAIRNESS_ID_ALIASES}
)


class Route(StrictModel):
    """First match wins; an empty field matches everything; empty queue/tier = the defaults.

    A route without a queue (and no default queue) is live-only.
    """

    model: str = ""
    tenant: str = ""
    queue: str = ""
    tier: str = ""


class TierObjectives(StrictModel):
    reserved: str = ""
    overflow: str = ""


class QuotaParams(StrictModel):
    """Limit per tenant; a tenant without a limit is always reserved; 0 = always overflow."""

    prefix: str = "quota:"
    attribute: str = "userid"
    limits: dict[str, Annotated[FlexInt, Field(ge=0)]] = Field(default_factory=dict)
    window_seconds: FlexFloat = Field(default=300.0, gt=0)


class ModeTimeout(StrictModel):
    default_seconds: FlexFloat | None = Field(default=None, gt=0)
    max_seconds: FlexFloat | None = Field(default=None, gt=0)


class Timeouts(StrictModel):
    """Seconds. wait: 60 default, max(3600, default) cap; enqueue: 3600 default, no cap."""

    wait: ModeTimeout = Field(default_factory=ModeTimeout)
    enqueue: ModeTimeout = Field(default_factory=ModeTimeout)

    def wait_seconds(self) -> tuple[float, float]:
        default = self.wait.default_seconds or 60.0
        return default, self.wait.max_seconds or max(3600.0, default)

    def enqueue_seconds(self) -> tuple[float, float | None]:
        return self.enqueue.default_seconds or 3600.0, self.enqueue.max_seconds


class Patience(StrictModel):
    """sluiceway: learn each tenant's patience from its wait-mode clients that hang up, and cut
    their deadlines to it (docs/coordinator.md, "Patience")."""

    learn: bool = True
    min_samples: FlexInt = Field(default=5, ge=1)
    window: FlexInt = Field(default=32, ge=1)
    quantile: FlexFloat = Field(default=0.5, ge=0, le=1)
    max_age_seconds: FlexFloat = Field(default=600.0, gt=0)


class BatchSettings(StrictModel):
    """sluiceway: the Batch API (``/v1/files``, ``/v1/batches``; docs/batch.md)."""

    enabled: bool = True
    files_url: str = Field(default="sluiceway-batch-files", min_length=1)
    group_prompts: bool = True  # lines sharing a system prompt run together (prefix cache)


class AsyncBrokerParams(StrictModel):
    """The ``async-broker`` step's parameters (upstream names; header names lower-cased)."""

    redis_url: str = Field(min_length=1)
    mode_header: str = headers.ASYNC_MODE
    tenant_header: str = headers.TENANT
    timeout_header: str = "x-request-timeout-seconds"
    routes: list[Route] = Field(default_factory=list)
    default_queue: str = "request-sortedset"
    default_tier: str = ""
    objectives: dict[str, TierObjectives] = Field(default_factory=dict)
    objective_header: str = headers.OBJECTIVE
    fairness_header: str = headers.FAIRNESS_ID
    quota: QuotaParams = Field(default_factory=QuotaParams)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    patience: Patience = Field(default_factory=Patience)
    wait_cap_seconds: FlexFloat | None = Field(default=None, gt=0)
    fetch_grace_seconds: FlexFloat = Field(default=60.0, ge=0)
    wakeup_mode: Literal["auto", "notify", "poll"] = "auto"
    forward_headers: list[str] = Field(
        default_factory=lambda: [headers.SLO_TTFT_MS, headers.SLO_TPOT_MS]
    )
    upstream_url: str = ""
    api_keys: dict[str, str] = Field(default_factory=dict)
    batch: BatchSettings = Field(default_factory=BatchSettings)

    @field_validator("redis_url")
    @classmethod
    def _names_a_broker(cls, value: str) -> str:
        transport = broker_transport(value)
        if transport is None:
            raise ValueError(
                f"{mask_credentials(value)!r} names no broker: use redis://, rediss://, "
                "redis+sentinel://, rediss+sentinel://, postgresql://, memory:// or sqlite:///PATH"
            )
        if transport == "redis-sortedset":
            try:
                parse_redis_address(value, field="")
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("mode_header", "tenant_header", "timeout_header", "objective_header")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @field_validator("fairness_header")
    @classmethod
    def _lower_fairness(cls, value: str) -> str:
        return value.lower()

    @field_validator("forward_headers")
    @classmethod
    def _forwardable(cls, value: list[str]) -> list[str]:
        lowered = [name.lower() for name in value]
        bad = sorted(set(lowered) & _FORBIDDEN_FORWARD)
        if bad:
            raise ValueError(f"{bad[0]} is set by the coordinator and cannot be forwarded")
        return lowered


class ServerConfig(StrictModel):
    listen_addr: str = ":8080"
    secure_serving: bool = False
    read_timeout: Duration = 30.0
    write_timeout: Duration = 600.0
    shutdown_timeout: Duration = 25.0

    def check(self, path: str) -> list[str]:
        if self.secure_serving:
            raise UnsupportedError(
                "TLS serving is not supported; terminate TLS in front of the coordinator",
                field=join_path(path, "secure_serving"),
            )
        return []


class GatewayConfig(StrictModel):
    COSMETIC = frozenset({"max_idle_conns_per_host", "idle_conn_timeout"})

    address: str = ""
    max_idle_conns_per_host: FlexInt | None = None
    idle_conn_timeout: Duration | None = None
    timeout: Duration = 600.0


class PipelineStep(StrictModel):
    """A step, named by ``name`` (or ``type``), parameters in ``params`` (or ``parameters``)."""

    name: str = ""
    type: str = ""
    params: dict[str, Any] | None = None
    parameters: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _named(self) -> PipelineStep:
        if not (self.name or self.type):
            raise ValueError("a step needs a name")
        return self

    @property
    def step(self) -> str:
        return self.name or self.type

    @property
    def step_params(self) -> dict[str, Any]:
        return self.params or self.parameters or {}


class Pipeline(StrictModel):
    use_openai_format: bool = True
    steps: list[PipelineStep] = Field(default_factory=list)


class CoordinatorConfig(StrictModel):
    """The coordinator's effective settings; ``broker`` is the async-broker parameter block."""

    COSMETIC = frozenset({"log_level"})

    log_level: int | str | None = None
    server: ServerConfig = Field(default_factory=ServerConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    pipeline: Pipeline = Field(default_factory=Pipeline)

    @property
    def upstream_url(self) -> str:
        """Where passthrough goes: ``upstream_url``, else ``gateway.address``."""
        return self.broker.upstream_url or self.gateway.address

    @property
    def broker(self) -> AsyncBrokerParams:
        return AsyncBrokerParams.model_validate(self.pipeline.steps[0].step_params)

    def check(self, path: str) -> list[str]:
        steps = self.pipeline.steps
        where = join_path(path, "pipeline", "steps")
        if not steps or steps[0].step != BROKER_STEP:
            raise ConfigError(f"the first step must be {BROKER_STEP!r}", field=join_path(where, 0))
        broker = validate_model(AsyncBrokerParams, steps[0].step_params, path=f"{where}[0].params")
        warnings = list(broker.warnings)
        if not self.upstream_url:
            warnings.append(f"{join_path(path, 'gateway.address')}: no passthrough target set")
        for index, step in enumerate(steps[1:], start=1):
            warnings.append(
                f"{join_path(where, index)}: step {step.step!r} is accepted and ignored"
            )
        return warnings


def load_coordinator_config(data: Any, *, path: str = "") -> Loaded[CoordinatorConfig]:
    """Validate a whole coordinator file or a bare async-broker parameter block."""
    if isinstance(data, Mapping) and "redis_url" in data:
        data = {"pipeline": {"steps": [{"name": BROKER_STEP, "params": dict(data)}]}}
    return validate_model(CoordinatorConfig, data, path=path)
