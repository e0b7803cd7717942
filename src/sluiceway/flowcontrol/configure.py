"""Turn a parsed ``EndpointPickerConfig`` into flow-control settings and a detector.

This module is the engine's one door to ``sluiceway.config``: it reads the validated plugin
parameter models and builds the policies and detectors they describe, so the rest of
``flowcontrol`` stays a pure engine that imports no configuration code and no pydantic.

Plugins are instantiated once per instance name and shared (policies keep per-band state
themselves). Defaults follow upstream: global-strict fairness, FCFS ordering, static usage
limit 1.0, the utilization detector (also built from the legacy top-level
``saturationDetector``). With the ``flowControl`` gate off the router uses legacy admission;
its detector is the configured one, or none (everything passes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

from sluiceway.config.flow_plugins import (
    AdaptiveHoldbackParams,
    ConcurrencyDetectorParams,
    EDFParams,
    FCFSParams,
    GlobalStrictParams,
    PriorityHoldbackParams,
    RoundRobinParams,
    SLODeadlineParams,
    SoftReflectiveParams,
    StaticUsageLimitParams,
    TokenFairParams,
    UtilizationDetectorParams,
)
from sluiceway.config.registry import PLUGIN_TYPES, params_model, require_implemented
from sluiceway.config.router import EndpointPickerConfig, FlowControlConfig, PriorityBandConfig
from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import (
    FairnessPolicy,
    OrderingPolicy,
    SaturationDetector,
    UsageLimitPolicy,
)
from sluiceway.flowcontrol.fairness import GlobalStrict, RoundRobin, TokenFair
from sluiceway.flowcontrol.ordering import EDF, FCFS, SLODeadline
from sluiceway.flowcontrol.saturation import ConcurrencyDetector, UtilizationDetector
from sluiceway.flowcontrol.settings import BandSettings, EvictionSettings, FlowControlSettings
from sluiceway.flowcontrol.usage import (
    AdaptiveHoldback,
    PriorityHoldback,
    SoftReflective,
    StaticUsageLimit,
)

__all__ = ["RouterFlowControl", "build_plugin", "configure", "idle_detector_notes"]

_FAIRNESS = "global-strict-fairness-policy"
_ORDERING = "fcfs-ordering-policy"
_USAGE = "static-usage-limit-policy"
_DETECTOR = "utilization-detector"
# Confirmation grace for eviction: the concurrency detector sees a stream's end at once; a
# scraped signal lags by the scrape interval plus staleness.
_SCRAPE_INTERVAL = 0.05
_GRACE_MARGIN = 0.25
_CONCURRENCY_GRACE = 0.01


@dataclass(frozen=True, slots=True)
class RouterFlowControl:
    """``enabled``: the flowControl gate; ``detector`` None means no saturation signal."""

    enabled: bool
    settings: FlowControlSettings
    detector: SaturationDetector | None


class _Plugins:
    def __init__(self, config: EndpointPickerConfig) -> None:
        self._config = config
        self._built: dict[str, Any] = {}

    def get(self, ref: str, where: str) -> Any:
        if ref in self._built:
            return self._built[ref]
        spec = self._config.plugin(ref)
        if spec is None:
            raise ConfigError(f"no plugin named {ref!r}", field=where)
        require_implemented(spec.type, field=where)
        model = params_model(spec.type)
        if model is None:  # pragma: no cover - require_implemented guarantees a model
            raise ConfigError(f"plugin type {spec.type!r} has no parameters model", field=where)
        built = build_plugin(model.model_validate(spec.parameters))
        self._built[ref] = built
        return built


def _token_fair(p: TokenFairParams) -> TokenFair:
    return TokenFair(p.input_token_weight, p.output_token_weight)


def _priority_holdback(p: PriorityHoldbackParams) -> PriorityHoldback:
    return PriorityHoldback(
        p.min_ceiling, p.max_ceiling, domain=p.domain, explicit=dict(p.ceilings)
    )


def _adaptive_holdback(p: AdaptiveHoldbackParams) -> AdaptiveHoldback:
    return AdaptiveHoldback(p.window, p.buckets, p.safety, p.margin, p.min_ceiling, p.max_ceiling)


def _utilization(p: UtilizationDetectorParams) -> UtilizationDetector:
    return UtilizationDetector(
        p.queue_depth_threshold,
        p.kv_cache_util_threshold,
        p.metrics_staleness_threshold,
        p.headroom,
    )


def _concurrency(p: ConcurrencyDetectorParams) -> ConcurrencyDetector:
    return ConcurrencyDetector(
        p.max_concurrency, p.max_token_concurrency, p.concurrency_mode, p.headroom
    )


# parameters model -> builder of the policy or detector it configures
_BUILDERS: Final[dict[type[Any], Callable[[Any], object]]] = {
    GlobalStrictParams: lambda _: GlobalStrict(),
    RoundRobinParams: lambda _: RoundRobin(),
    TokenFairParams: _token_fair,
    FCFSParams: lambda _: FCFS(),
    EDFParams: lambda _: EDF(),
    SLODeadlineParams: lambda _: SLODeadline(),
    StaticUsageLimitParams: lambda p: StaticUsageLimit(p.threshold),
    PriorityHoldbackParams: _priority_holdback,
    SoftReflectiveParams: lambda _: SoftReflective(),
    AdaptiveHoldbackParams: _adaptive_holdback,
    UtilizationDetectorParams: _utilization,
    ConcurrencyDetectorParams: _concurrency,
}


def build_plugin(params: object) -> object:
    """The policy or detector that a validated plugin parameters model configures.

    Raises TypeError for a model with no builder (a registry entry without one here is a bug).
    """
    builder = _BUILDERS.get(type(params))
    if builder is None:
        raise TypeError(f"no flow-control builder for {type(params).__name__}")
    return builder(params)


def configure(config: EndpointPickerConfig) -> RouterFlowControl:
    """Settings and detector for the router; raises ConfigError naming the field at fault."""
    plugins = _Plugins(config)
    fc = config.flow_control or FlowControlConfig()
    base = "flowControl"
    detector = _detector(config, fc, plugins)
    usage_ref = fc.usage_limit_policy_plugin_ref or _USAGE
    settings = FlowControlSettings(
        max_bytes=int(fc.max_bytes or 0),
        max_requests=int(fc.max_requests or 0),
        default_ttl=fc.default_request_ttl,
        no_endpoint_ttl=fc.no_endpoint_request_ttl,
        bands=tuple(
            _band(b, f"{base}.priorityBands[{i}]", plugins) for i, b in enumerate(fc.priority_bands)
        ),
        default_band=_template(fc.default_priority_band, f"{base}.defaultPriorityBand", plugins),
        default_negative_band=_optional_template(
            fc.default_negative_priority_band, f"{base}.defaultNegativePriorityBand", plugins
        ),
        usage_limit=cast(
            UsageLimitPolicy, plugins.get(usage_ref, f"{base}.usageLimitPolicyPluginRef")
        ),
        eviction=EvictionSettings(enabled=fc.enable_eviction, grace=_grace(detector)),
    )
    return RouterFlowControl(config.flow_control_enabled, settings, detector)


def _band(band: PriorityBandConfig, where: str, plugins: _Plugins) -> BandSettings:
    fairness = plugins.get(band.fairness_policy_ref or _FAIRNESS, f"{where}.fairnessPolicyRef")
    ordering = plugins.get(band.ordering_policy_ref or _ORDERING, f"{where}.orderingPolicyRef")
    return BandSettings(
        band.priority,
        int(band.max_bytes or 0),
        int(band.max_requests or 0),
        fairness=cast(FairnessPolicy, fairness),
        ordering=cast(OrderingPolicy, ordering),
    )


def _template(band: PriorityBandConfig | None, where: str, plugins: _Plugins) -> BandSettings:
    return _band(band or PriorityBandConfig(), where, plugins)


def _optional_template(
    band: PriorityBandConfig | None, where: str, plugins: _Plugins
) -> BandSettings | None:
    return None if band is None else _band(band, where, plugins)


def _detector(
    config: EndpointPickerConfig, fc: FlowControlConfig, plugins: _Plugins
) -> SaturationDetector | None:
    if fc.saturation_detector is not None:
        where = "flowControl.saturationDetector.pluginRef"
        return cast(SaturationDetector, plugins.get(fc.saturation_detector.plugin_ref, where))
    legacy = config.saturation_detector
    if legacy is not None:
        return UtilizationDetector(
            legacy.queue_depth_threshold or 5,
            legacy.kv_cache_util_threshold or 0.8,
            legacy.metrics_staleness_threshold or 0.2,
        )
    if not config.flow_control_enabled:
        return None
    return cast(SaturationDetector, plugins.get(_DETECTOR, "flowControl.saturationDetector"))


def idle_detector_notes(config: EndpointPickerConfig) -> list[str]:
    """Detector plugins declared but not gating dispatch (ignored, as upstream does). Said at
    start-up: a ``concurrency-detector`` that ``flowControl.saturationDetector`` does not name
    leaves the default utilization detector in charge, with other thresholds."""
    fc = config.flow_control
    if fc is not None and fc.saturation_detector is not None:
        chosen, gating = fc.saturation_detector.plugin_ref, "it names"
    elif config.saturation_detector is not None:
        chosen, gating = "", "the top-level saturationDetector"
    elif config.flow_control_enabled:
        chosen, gating = _DETECTOR, f"the default {_DETECTOR}"
    else:
        return []
    return [
        f"plugins: detector {spec.instance_name!r} is not named by "
        f"flowControl.saturationDetector.pluginRef; {gating} gates dispatch"
        for spec in config.plugins
        if PLUGIN_TYPES.get(spec.type) == "detector" and spec.instance_name != chosen
    ]


def _grace(detector: SaturationDetector | None) -> float:
    if isinstance(detector, ConcurrencyDetector):
        return _CONCURRENCY_GRACE
    if isinstance(detector, UtilizationDetector):
        return _SCRAPE_INTERVAL + detector.staleness + _GRACE_MARGIN
    return EvictionSettings().grace
