"""Recognise which configuration document a file holds and load it (``sluiceway check-config``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.config.documents import read_documents
from sluiceway.config.llm_inference_service import (
    is_llm_inference_service,
    load_llm_inference_service,
)
from sluiceway.config.objectives import load_objectives
from sluiceway.config.processor import (
    DEFAULT_POOL_ID,
    TransportConfig,
    load_merge_policy,
    load_pools,
    load_transport_config,
)
from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.config.router_values import RouterValues
from sluiceway.config.strict import Loaded, validate_model
from sluiceway.errors import ConfigError

__all__ = ["KINDS", "CheckResult", "check_file", "detect_kind"]

KINDS: Final = (
    "transport-config",
    "pools",
    "merge-policy",
    "helm-values",
    "router-values",
    "endpoint-picker-config",
    "llm-inference-service",
    "inference-objectives",
    "coordinator",
    "kubernetes-manifest",
)

# Kubernetes objects that deploy the system but configure nothing sluiceway reads.
_DEPLOYMENT_KINDS: Final = frozenset(
    {
        "ConfigMap",
        "Deployment",
        "Kustomization",
        "Namespace",
        "PodMonitor",
        "PrometheusRule",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "StatefulSet",
    }
)

_TRANSPORT_HINTS: Final = frozenset({"queues", "topics", "url", "project_id", "result_topic_id"})
_COORDINATOR_HINTS: Final = frozenset({"pipeline", "server", "gateway", "redis_url"})


@dataclass(frozen=True, slots=True)
class CheckResult:
    kind: str
    warnings: tuple[str, ...]


def _mapping_kind(doc: Mapping[str, Any]) -> str | None:
    kind = doc.get("kind")
    if kind == "EndpointPickerConfig":
        return "endpoint-picker-config"
    if is_llm_inference_service(doc):
        return "llm-inference-service"
    if kind in ("InferenceObjective", "List"):
        return "inference-objectives"
    if "ap" in doc:
        return "helm-values"
    if "router" in doc:
        return "router-values"
    if doc and (
        doc.get("type") in ("tier-priority", "random-robin") or set(doc) <= {"type", "parameters"}
    ):
        return "merge-policy"
    if set(doc) & _COORDINATOR_HINTS:
        return "coordinator"
    if set(doc) & _TRANSPORT_HINTS:
        return "transport-config"
    return None


def _document_kind(doc: Any) -> str | None:
    if isinstance(doc, list):
        return "pools"
    if not isinstance(doc, Mapping):
        return None
    kind = doc.get("kind")  # any YAML value: a list is not hashable, so not looked up as one
    if doc.get("apiVersion") and isinstance(kind, str) and kind in _DEPLOYMENT_KINDS:
        return "kubernetes-manifest"
    return _mapping_kind(doc)


def detect_kind(documents: list[Any]) -> str:
    """The kind of a file's documents; ConfigError when it is none we know."""
    kinds = {_document_kind(doc) for doc in documents} or {None}
    if None in kinds:
        raise ConfigError(f"not a configuration document sluiceway knows ({', '.join(KINDS)})")
    if len(kinds) > 1:
        found = ", ".join(sorted(str(k) for k in kinds))
        raise ConfigError(f"documents of different kinds in one file: {found}")
    kind = kinds.pop()
    assert kind is not None
    if len(documents) > 1 and kind not in ("inference-objectives", "kubernetes-manifest"):
        raise ConfigError(f"a {kind} file holds one document, found {len(documents)}")
    return kind


def _manifest(documents: list[Any]) -> Loaded[list[Any]]:
    for index, doc in enumerate(documents):
        if not isinstance(doc, Mapping):  # reached with --kind kubernetes-manifest
            raise ConfigError(f"document {index + 1}: a Kubernetes object must be a mapping")
    kinds = ", ".join(sorted({str(doc.get("kind")) for doc in documents}))
    return Loaded(documents, (f"deployment-only Kubernetes objects ({kinds}): nothing to check",))


def _transport_for(doc: Any, transport: str | None) -> str:
    if transport:
        return transport
    if isinstance(doc, Mapping) and ("topics" in doc or "project_id" in doc):
        return "gcp-pubsub"
    if isinstance(doc, Mapping) and str(doc.get("url", "")).startswith(
        ("postgres://", "postgresql://")
    ):
        return "postgres"
    return "redis-sortedset"


def _with_pool_notes(loaded: Loaded[TransportConfig]) -> Loaded[TransportConfig]:
    """A transport config alone cannot show its pools: name the ones a pools file must hold."""
    notes = [
        f"queues[{i}].worker_pool_id: pool {q.worker_pool_id!r} must be defined by "
        "--pool-config-file (only 'default' exists without one)"
        for i, q in enumerate(loaded.value.all_queues)
        if q.worker_pool_id != DEFAULT_POOL_ID
    ]
    return Loaded(loaded.value, (*loaded.warnings, *notes))


def _loader(kind: str, transport: str | None) -> Callable[[Path, list[Any]], Loaded[Any]]:
    loaders: dict[str, Callable[[Path, list[Any]], Loaded[Any]]] = {
        "transport-config": lambda p, d: _with_pool_notes(
            load_transport_config(d[0], _transport_for(d[0], transport), env=os.environ)
        ),
        "pools": lambda p, d: load_pools(d[0]),
        "merge-policy": lambda p, d: load_merge_policy(d[0]),
        "helm-values": lambda p, d: load_processor_settings(config_file=p, transport=transport),
        "router-values": lambda p, d: validate_model(RouterValues, d[0]),
        "endpoint-picker-config": lambda p, d: load_endpoint_picker_config(d[0]),
        "llm-inference-service": lambda p, d: load_llm_inference_service(d[0]),
        "inference-objectives": lambda p, d: load_objectives(d),
        "coordinator": lambda p, d: load_coordinator_config(d[0]),
        "kubernetes-manifest": lambda p, d: _manifest(d),
    }
    return loaders[kind]


def check_file(
    path: str | Path, *, kind: str | None = None, transport: str | None = None
) -> CheckResult:
    """Load ``path`` as its (detected or given) kind; ConfigError names the bad field."""
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"unknown document kind {kind!r} (known: {', '.join(KINDS)})")
    documents = read_documents(path)
    chosen = kind or detect_kind(documents)
    loaded = _loader(chosen, transport)(Path(path), documents or [{}])
    return CheckResult(chosen, loaded.warnings)
