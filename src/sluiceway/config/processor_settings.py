"""Everything the processor starts from: flags, the JSON files, or the Helm values (``--config``).

Precedence: a flag given on the command line beats the ``--config`` values file, which beats
llm-d-async's defaults (docs/configuration.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final

from sluiceway.config.documents import read_document
from sluiceway.config.gates import gate_types_in
from sluiceway.config.helm import HelmValues
from sluiceway.config.processor import (
    DEFAULT_POOL_ID,
    MergePolicyConfig,
    PoolConfig,
    TransportConfig,
    load_merge_policy,
    load_pools,
    load_transport_config,
)
from sluiceway.config.strict import Loaded, validate_model
from sluiceway.errors import ConfigError

__all__ = [
    "Flag",
    "ProcessorSettings",
    "default_of",
    "flag_of",
    "load_processor_settings",
    "scalar_settings",
    "setting",
]


FLAG: Final = "sluiceway.flag"


@dataclass(frozen=True)
class Flag:
    """How one scalar setting reaches the command line (``--name-with-dashes``) and the values
    file; kept on its :class:`ProcessorSettings` field, so the field's one line says its name,
    type, default, flag and values key."""

    help: str
    shown: str  # the default as the help text shows it
    duration: bool = False  # the flag takes a duration ("5m", "300ms") and yields seconds
    values: bool = False  # the values file may set it too, as ``ap.<name>``
    minimum: float | None = None
    maximum: float | None = None

    def option(self, name: str) -> str:
        return "--" + name.replace("_", "-")


def setting(default: object, help: str, shown: str = "", **flag: Any) -> Any:
    """A :class:`ProcessorSettings` field that is also a flag (see :class:`Flag`)."""
    meta = {FLAG: Flag(help, shown or str(default), **flag)}
    return field(default=default, metadata=meta)


PORT_MAX: Final = 65535


@dataclass(frozen=True, slots=True)
class ProcessorSettings:
    """The processor's whole configuration. Durations in seconds (scaled time).

    ``pools`` always contains every pool a queue names; the implicit ``default`` pool has
    ``concurrency`` workers unless the pools file defines it. Each scalar setting is declared
    once, as a field made by :func:`setting`: its flag, its values key and its default follow
    from that line (:func:`scalar_settings`).
    """

    transport: str
    transport_config: TransportConfig
    pools: tuple[PoolConfig, ...]
    merge_policy: MergePolicyConfig
    concurrency: int = setting(64, "Workers of the default pool.", values=True, minimum=1)
    request_timeout: float = setting(300.0, "Per HTTP attempt, e.g. 5m.", "5m", duration=True)
    drain_timeout: float = setting(
        120.0, "On SIGTERM, time to finish in flight.", "2m", duration=True, values=True
    )
    gate_wait_timeout: float = setting(
        300.0, "Longest wait of a waiting gate.", "5m", duration=True
    )
    prometheus_url: str = setting("", "Prometheus for prometheus-* gates.", "none", values=True)
    prometheus_cache_ttl: float = setting(
        5.0, "Reuse a PromQL answer this long.", "5s", duration=True, values=True
    )
    feasibility: bool = setting(
        True,
        "Answer at once (504, infeasible) what cannot finish before its deadline.",
        values=True,
    )
    service_time_prior: float = setting(
        0.0,
        "Dispatch-to-answer time assumed until learned, e.g. 10s.",
        "0: learn first",
        duration=True,
        values=True,
    )
    service_time_quantile: float = setting(
        0.5,
        "Which quantile of recent service times a request must have time left for, e.g. 0.9.",
        "0.5: the median",
        values=True,
        minimum=0.01,
        maximum=1.0,
    )
    overload_sojourn_target: float = setting(
        5.0,
        "Read a queue newest first once its oldest request waited longer than this, e.g. 5s.",
        "5s; 0: never",
        duration=True,
        values=True,
    )
    overload_interval: float = setting(
        10.0,
        "How long the oldest request's wait must stay above that target first, e.g. 10s.",
        "10s; 0: never",
        duration=True,
        values=True,
    )
    # the values file sets the ports as ap.metrics.port and ap.health.port
    metrics_port: int = setting(9090, "Port of /metrics.", minimum=0, maximum=PORT_MAX)
    health_port: int = setting(8081, "Port of /healthz, /readyz.", minimum=0, maximum=PORT_MAX)
    transport_config_watch_interval: float = setting(
        0.0,
        "Reload the transport config file this often, e.g. 10s.",
        "never",
        duration=True,
        values=True,
    )
    transport_config_file: Path | None = None
    # Other URLs of the processor's own Redis: the values file's ``urlSecret`` URL when
    # REDIS_URL overrides it, so gates whose ``address`` names that server share its client.
    url_aliases: tuple[str, ...] = ()

    def pool(self, pool_id: str) -> PoolConfig:
        """The pool named ``pool_id`` (KeyError if none)."""
        for pool in self.pools:
            if pool.id == pool_id:
                return pool
        raise KeyError(pool_id)


def scalar_settings() -> tuple[Field[Any], ...]:
    """The :class:`ProcessorSettings` fields that are flags, in declaration order."""
    return tuple(f for f in fields(ProcessorSettings) if FLAG in f.metadata)


def flag_of(setting_field: Field[Any]) -> Flag:
    flag = setting_field.metadata[FLAG]
    assert isinstance(flag, Flag)
    return flag


def default_of(name: str) -> Any:
    """The declared default of scalar setting ``name`` (the runtime's defaults follow it)."""
    return next(f.default for f in scalar_settings() if f.name == name)


@dataclass
class _Sources:
    """Raw documents gathered from the values file and the flags, before validation."""

    transport: str = "redis-sortedset"
    transport_config: Any = None
    transport_config_path: str = "transport-config"
    pools: Any = None
    pools_path: str = "pools"
    merge_policy: Any = None
    merge_policy_path: str = "merge-policy"
    # The file (or flag) each document came from, named by its errors.
    origins: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    url_aliases: tuple[str, ...] = ()
    url_secret: str | None = None  # the values file's urlSecret URL, when it has the key


def from_file(origin: str | Path | None, exc: ConfigError) -> ConfigError:
    """``exc`` naming the file (or flag) its document came from, once."""
    if origin is None or str(exc).startswith(f"{origin}:"):
        return exc
    named = type(exc)(f"{origin}: {exc}")
    named.field = exc.field
    return named


def _from_values(path: Path) -> _Sources:
    try:
        loaded = validate_model(HelmValues, read_document(path), path="")
    except ConfigError as exc:
        raise from_file(path, exc) from None
    ap = loaded.value.ap
    config = dict(ap.transport_config)
    url_secret = config.pop("urlSecret", None)
    secret_url = str(url_secret.get("url", "")) if isinstance(url_secret, Mapping) else ""
    in_values = [f.name for f in scalar_settings() if flag_of(f).values]
    scalars = {name: getattr(ap, name) for name in in_values if name in ap.model_fields_set}
    if "port" in ap.metrics.model_fields_set:
        scalars["metrics_port"] = ap.metrics.port
    if "port" in ap.health.model_fields_set:
        scalars["health_port"] = ap.health.port
    return _Sources(
        transport=ap.transport or "redis-sortedset",
        transport_config=config,
        transport_config_path="ap.transportConfig",
        pools=list(ap.worker_pools),
        pools_path="ap.workerPools",
        merge_policy=ap.request_merge_policy_config,
        merge_policy_path="ap.requestMergePolicyConfig",
        origins=dict.fromkeys(("transport", "pools", "merge_policy"), str(path)),
        scalars=scalars,
        warnings=list(loaded.warnings),
        url_aliases=(secret_url,) if secret_url else (),
        url_secret=secret_url if url_secret is not None else None,
    )


# The environment variables that override a values file's ``urlSecret`` URL, per transport
# (first set wins; the transport config's own ``url`` wins over all).
_URL_ENV: Final = {"postgres": ("DATABASE_URL", "SQL_URL")}
_REDIS_URL_ENV: Final = ("REDIS_URL",)


def _apply_url_secret(sources: _Sources, env: Mapping[str, str]) -> None:
    """The values file's ``urlSecret`` URL, unless the environment variable of the transport
    finally chosen (flags included) overrides it: ``REDIS_URL``, ``DATABASE_URL`` for postgres."""
    if sources.url_secret is None or sources.transport_config_path != "ap.transportConfig":
        return  # no secret, or a flag replaced the values file's transport config
    names = _URL_ENV.get(sources.transport, _REDIS_URL_ENV)
    config = sources.transport_config
    if sources.url_secret and not config.get("url") and not any(env.get(n) for n in names):
        config["url"] = sources.url_secret
    sources.warnings.append(f"ap.transportConfig.urlSecret: the URL comes from {names[0]} when set")


def _apply_flags(
    sources: _Sources,
    *,
    transport: str | None,
    transport_config: str | None,
    transport_config_file: Path | None,
    pool_config_file: Path | None,
    merge_policy_file: Path | None,
) -> None:
    if transport:
        sources.transport = transport
    if transport_config is not None and transport_config_file is not None:
        raise ConfigError("give --transport-config or --transport-config-file, not both")
    if transport_config is not None:
        try:
            sources.transport_config = json.loads(transport_config)
        except ValueError as exc:
            raise ConfigError(f"not valid JSON: {exc}", field="--transport-config") from None
        sources.transport_config_path = ""
        sources.origins["transport"] = "--transport-config"
    if transport_config_file is not None:
        sources.transport_config = read_document(transport_config_file)
        sources.transport_config_path = ""
        sources.origins["transport"] = str(transport_config_file)
    if pool_config_file is not None:
        sources.pools, sources.pools_path = read_document(pool_config_file), ""
        sources.origins["pools"] = str(pool_config_file)
    if merge_policy_file is not None:
        sources.merge_policy, sources.merge_policy_path = read_document(merge_policy_file), ""
        sources.origins["merge_policy"] = str(merge_policy_file)


def _with_default_pool(pools: list[PoolConfig], concurrency: int) -> tuple[PoolConfig, ...]:
    if any(p.id == DEFAULT_POOL_ID for p in pools):
        return tuple(pools)
    return (*pools, PoolConfig(id=DEFAULT_POOL_ID, workers=concurrency))


def _cross_checks(settings: ProcessorSettings, *, prometheus_field: str) -> None:
    pool_ids = {p.id for p in settings.pools}
    key = "topics" if settings.transport == "gcp-pubsub" else "queues"
    for index, queue in enumerate(settings.transport_config.all_queues):
        if queue.worker_pool_id not in pool_ids:
            raise ConfigError(
                f"pool {queue.worker_pool_id!r} is not defined",
                field=f"{key}[{index}].worker_pool_id",
            )
    carriers = [*settings.transport_config.all_queues, *settings.pools]
    used = set().union(*(gate_types_in(c.gate_type, c.gate_params) for c in carriers))
    if any(name.startswith("prometheus-") for name in used) and not settings.prometheus_url:
        raise ConfigError("a prometheus-* gate needs a Prometheus URL", field=prometheus_field)
    if "sql-quota" in used and settings.transport != "postgres":
        raise ConfigError("a sql-quota gate needs --transport postgres", field="transport")
    watching = settings.transport_config_watch_interval > 0
    if watching and (
        settings.transport_config_file is None or settings.transport != "redis-sortedset"
    ):
        raise ConfigError(
            "needs --transport redis-sortedset and --transport-config-file",
            field="transport_config_watch_interval",
        )


def load_processor_settings(
    *,
    config_file: str | Path | None = None,
    transport: str | None = None,
    transport_config: str | None = None,
    transport_config_file: str | Path | None = None,
    pool_config_file: str | Path | None = None,
    request_merge_policy_config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Loaded[ProcessorSettings]:
    """Build :class:`ProcessorSettings` from a values file and flags (flags win).

    ``overrides`` holds scalar flags (keys as the dataclass fields, e.g. ``concurrency``,
    ``request_timeout`` in seconds); None values mean "not given". ``env`` defaults to
    ``os.environ`` (``REDIS_URL``, ``DATABASE_URL``). Raises ConfigError naming the bad field.
    """
    env = os.environ if env is None else env
    sources = _from_values(Path(config_file)) if config_file else _Sources()
    tc_file = Path(transport_config_file) if transport_config_file else None
    _apply_flags(
        sources,
        transport=transport,
        transport_config=transport_config,
        transport_config_file=tc_file,
        pool_config_file=Path(pool_config_file) if pool_config_file else None,
        merge_policy_file=(
            Path(request_merge_policy_config_file) if request_merge_policy_config_file else None
        ),
    )
    _apply_url_secret(sources, env)
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    scalars = {**sources.scalars, **given}
    unknown = sorted(set(scalars) - {f.name for f in scalar_settings()})
    if unknown:
        raise ConfigError("unknown setting", field=unknown[0])
    origins = sources.origins
    try:
        tc = load_transport_config(
            sources.transport_config or {},
            sources.transport,
            env=env,
            path=sources.transport_config_path,
        )
    except ConfigError as exc:
        raise from_file(origins.get("transport"), exc) from None
    try:
        pools = load_pools(sources.pools or [], path=sources.pools_path)
    except ConfigError as exc:
        raise from_file(origins.get("pools"), exc) from None
    try:
        policy = load_merge_policy(sources.merge_policy, path=sources.merge_policy_path)
    except ConfigError as exc:
        raise from_file(origins.get("merge_policy"), exc) from None
    settings = ProcessorSettings(
        transport=sources.transport,
        transport_config=tc.value,
        pools=(),
        merge_policy=policy.value,
        transport_config_file=tc_file,
        url_aliases=sources.url_aliases,
        **scalars,
    )
    settings = replace(settings, pools=_with_default_pool(pools.value, settings.concurrency))
    from_values = config_file is not None and "prometheus_url" not in given
    _cross_checks(
        settings, prometheus_field="ap.prometheusURL" if from_values else "--prometheus-url"
    )
    warnings = (*sources.warnings, *tc.warnings, *pools.warnings, *policy.warnings)
    return Loaded(settings, warnings)
