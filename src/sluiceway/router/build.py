"""Assemble a router from its configuration files (start-up errors name the field at fault).

``--config`` takes an ``EndpointPickerConfig`` document, the router chart's values file (the
``EndpointPickerConfig`` inside ``router.epp.pluginsCustomConfig``, the one
``pluginsConfigFile`` names, or the only one), or KServe's ``LLMInferenceService`` (the one
under ``spec.router.scheduler``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from sluiceway.clock import Clock
from sluiceway.config.documents import read_documents
from sluiceway.config.llm_inference_service import (
    is_llm_inference_service,
    load_llm_inference_service,
)
from sluiceway.config.router import EndpointPickerConfig, load_endpoint_picker_config
from sluiceway.config.router_values import RouterValues, embedded_picker_configs
from sluiceway.config.strict import validate_model
from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.configure import configure, idle_detector_notes
from sluiceway.observability.access_log import AccessLog
from sluiceway.observability.request_observer import RequestObserver
from sluiceway.observability.tracing import Tracing
from sluiceway.router.app import RouterApp
from sluiceway.router.gateway import Gateway
from sluiceway.router.load import LoadSource
from sluiceway.router.objectives import ObjectiveTable
from sluiceway.router.observed_app import ObservedRouterApp
from sluiceway.router.picker import PickerWeights
from sluiceway.router.pool import EndpointPool
from sluiceway.router.settings import RouterSettings
from sluiceway.router.trust import HeaderTrust

__all__ = [
    "KEYED_TRUST_NOTE",
    "OPEN_TRUST_NOTE",
    "build_router",
    "chart_pod_labels",
    "load_picker_config",
]

_MINIMAL: dict[str, Any] = {"apiVersion": "llm-d.ai/v1", "kind": "EndpointPickerConfig"}
OPEN_TRUST_NOTE: Final = (
    "trustedSources is not set: every caller's objective and fairness headers are trusted"
)
# The same configuration behind a mounted coordinator's API keys (HeaderTrust.behind_keys).
KEYED_TRUST_NOTE: Final = (
    "trustedSources is not set: with the coordinator's api_keys, callers' objective and "
    "fairness headers are dropped unless they come through the coordinator"
)


def load_picker_config(path: Path | None) -> tuple[EndpointPickerConfig, list[str]]:
    """The EndpointPickerConfig at ``path`` (None: flow control off, no detector)."""
    if path is None:
        return load_endpoint_picker_config(_MINIMAL).value, []
    docs = read_documents(path)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ConfigError("expected one YAML document", field=str(path))
    doc = docs[0]
    if "router" in doc and "kind" not in doc:
        return _from_values(doc, str(path))
    if is_llm_inference_service(doc):
        return _from_llm_inference_service(doc, str(path))
    loaded = load_endpoint_picker_config(doc, path=str(path))
    warnings = loaded.value.check(str(path))
    return loaded.value, [*loaded.warnings, *warnings]


def chart_pod_labels(path: Path | None) -> dict[str, str]:
    """``router.modelServers.matchLabels`` when ``path`` is the router chart's values file
    (empty otherwise): the model server Pods the chart would put in its pool."""
    if path is None:
        return {}
    docs = read_documents(path)
    doc = docs[0] if len(docs) == 1 else None
    if not isinstance(doc, dict) or "router" not in doc or "kind" in doc:
        return {}
    values = validate_model(RouterValues, doc, path=str(path)).value
    return dict(values.router.model_servers.match_labels)


def _from_values(doc: dict[str, Any], where: str) -> tuple[EndpointPickerConfig, list[str]]:
    values = validate_model(RouterValues, doc, path=where).value
    found = embedded_picker_configs(values, path=where)
    chosen = values.router.epp.plugins_config_file
    if chosen in found:
        config, warnings = found[chosen]
    elif len(found) == 1:
        config, warnings = next(iter(found.values()))
    else:
        raise ConfigError(
            "name the EndpointPickerConfig with pluginsConfigFile",
            field=f"{where}: router.epp.pluginsCustomConfig",
        )
    return config, list(warnings)  # embedded_picker_configs already checked each config


def _from_llm_inference_service(
    doc: dict[str, Any], where: str
) -> tuple[EndpointPickerConfig, list[str]]:
    loaded = load_llm_inference_service(doc, path=where)
    found = loaded.value
    if found.config is not None:
        return found.config, list(loaded.warnings)
    if found.reference is not None:
        raise ConfigError(f"{found.missing()}: give that document as --config", field=found.field)
    off = "the router runs with flow control off and no saturation detector"
    return load_endpoint_picker_config(_MINIMAL).value, [*loaded.warnings, off]


def _trust(config: EndpointPickerConfig) -> tuple[HeaderTrust, list[str]]:
    ts = config.trusted_sources
    if ts is None:
        return HeaderTrust(), [OPEN_TRUST_NOTE]
    return HeaderTrust.build(ts.cidrs, ts.secret_header, ts.secret), []


def build_router(
    config: EndpointPickerConfig,
    settings: RouterSettings,
    clock: Clock,
    *,
    objectives: ObjectiveTable | None = None,
    load: LoadSource | None = None,
    tracing: Tracing | None = None,
) -> tuple[RouterApp, list[str]]:
    """The ASGI app over a new :class:`Gateway` (observed: access log at
    ``settings.access_log_sample``, HTTP metrics, ``tracing`` when given), and start-up notes."""
    flow = configure(config)
    weights, notes = PickerWeights.from_config(config)
    trust, trust_notes = _trust(config)
    pool = EndpointPool(
        settings.endpoints, clock, load=load, weights=weights, affinity=settings.prefix_affinity
    )
    gateway = Gateway(settings, flow, clock, objectives=objectives, trust=trust, pool=pool)
    gateway.metrics.watch_pool(lambda: len(pool.healthy))
    access = AccessLog(settings.access_log_sample)
    observer = RequestObserver("router", gateway.metrics.registry, access, tracing)
    app = ObservedRouterApp(gateway, observer)
    return app, [*notes, *idle_detector_notes(config), *trust_notes]
