"""What an InferencePool selects, and which of its Pods take traffic (pure; no API calls).

Two versions of the InferencePool are read: ``inference.networking.k8s.io/v1``
(``spec.selector.matchLabels``, ``spec.targetPorts[].number``) and the older
``inference.networking.x-k8s.io/v1alpha2`` (``spec.selector`` as a flat label map,
``spec.targetPortNumber``). A Pod counts when it is Ready (condition ``Ready`` is ``True``),
has an IP and is not being deleted; each of its endpoints is ``http://POD_IP:PORT`` for every
target port (IPv6 addresses in brackets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sluiceway.errors import ConfigError

__all__ = [
    "POOL_VERSIONS",
    "PodTarget",
    "parse_selector",
    "pod_name",
    "pod_urls",
    "pool_target",
]

# (group, version) of the InferencePool, newest first: the order they are looked up in.
POOL_VERSIONS: Final = (
    ("inference.networking.k8s.io", "v1"),
    ("inference.networking.x-k8s.io", "v1alpha2"),
)


@dataclass(frozen=True, slots=True)
class PodTarget:
    """The Pods to route to: a label selector (every label must match) and the ports served."""

    labels: tuple[tuple[str, str], ...]
    ports: tuple[int, ...]

    @classmethod
    def of(cls, labels: Mapping[str, str], ports: tuple[int, ...]) -> PodTarget:
        return cls(tuple(sorted(labels.items())), ports)

    @property
    def selector(self) -> str:
        """As the API's ``labelSelector`` parameter: ``k=v,k2=v2``."""
        return ",".join(f"{k}={v}" for k, v in self.labels)


def parse_selector(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` as a label map; ConfigError naming ``--pod-selector``."""
    labels: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        key, eq, value = part.partition("=")
        if not part or not eq or not key.strip():
            raise ConfigError(f"{part!r} is not key=value", field="--pod-selector")
        labels[key.strip()] = value.strip()
    return labels


def _labels(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        raise ConfigError("must be a map of label names to values", field=where)
    if not raw:
        raise ConfigError("an empty selector would select every Pod", field=where)
    return {str(k): v for k, v in raw.items()}


def _port(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 < raw < 65536:
        raise ConfigError("must be a port number (1..65535)", field=where)
    return raw


def pool_target(pool: Mapping[str, Any]) -> PodTarget:
    """The Pods an InferencePool object selects; ConfigError naming the field at fault."""
    spec = pool.get("spec")
    if not isinstance(spec, Mapping):
        raise ConfigError("required key missing", field="spec")
    selector = spec.get("selector")
    if "targetPorts" in spec:  # v1
        if not isinstance(selector, Mapping):
            raise ConfigError("required key missing", field="spec.selector")
        labels = _labels(selector.get("matchLabels"), "spec.selector.matchLabels")
        entries = spec["targetPorts"]
        if not isinstance(entries, list) or not entries:
            raise ConfigError("must list at least one port", field="spec.targetPorts")
        ports = tuple(
            _port(e.get("number") if isinstance(e, Mapping) else None, f"spec.targetPorts[{i}]")
            for i, e in enumerate(entries)
        )
    elif "targetPortNumber" in spec:  # v1alpha2
        labels = _labels(selector, "spec.selector")
        ports = (_port(spec["targetPortNumber"], "spec.targetPortNumber"),)
    else:
        raise ConfigError("neither targetPorts nor targetPortNumber", field="spec")
    return PodTarget.of(labels, ports)


def pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _ready(pod: Mapping[str, Any]) -> str | None:
    """The Pod's IP when it takes traffic, else None."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    status = pod.get("status") or {}
    ip = status.get("podIP")
    conditions = status.get("conditions") or []
    ready = any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )
    return str(ip) if ip and ready else None


def pod_urls(pod: Mapping[str, Any], ports: tuple[int, ...]) -> tuple[str, ...]:
    """The Pod's endpoints (one per target port), or none when it does not take traffic."""
    ip = _ready(pod)
    if ip is None:
        return ()
    host = f"[{ip}]" if ":" in ip else ip
    return tuple(f"http://{host}:{port}" for port in ports)
