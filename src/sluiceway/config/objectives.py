"""``InferenceObjective`` documents: objective name -> priority, as the router reads them.

Accepted apiVersions: ``llm-d.ai/v1alpha2`` (``spec.poolRef``), the legacy
``inference.networking.x-k8s.io/v1alpha2`` (same shape) and ``llm-d.ai/v1`` (``spec.poolRefs[]`` or
``spec.poolSelector``). A file may hold several documents or a ``kind: List``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import ConfigDict, Field, model_validator

from sluiceway.config.strict import CamelModel, Loaded, join_path, validate_model
from sluiceway.errors import ConfigError

__all__ = ["OBJECTIVE_API_VERSIONS", "InferenceObjective", "load_objectives"]

OBJECTIVE_API_VERSIONS: Final = (
    "llm-d.ai/v1alpha2",
    "inference.networking.x-k8s.io/v1alpha2",
    "llm-d.ai/v1",
)


class ObjectMeta(CamelModel):
    """Kubernetes metadata: only ``name`` matters; the rest is the cluster's business."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    name: str = Field(min_length=1)
    namespace: str = ""
    labels: dict[str, str] = Field(default_factory=dict)


class PoolRef(CamelModel):
    name: str = Field(min_length=1)
    group: str = ""
    kind: str = ""


class ObjectiveSpec(CamelModel):
    """``priority`` unset = 0; negative = sheddable."""

    priority: int = 0
    pool_ref: PoolRef | None = None
    pool_refs: list[PoolRef] = Field(default_factory=list)
    pool_selector: dict[str, Any] | None = None


class InferenceObjective(CamelModel):
    api_version: Literal[
        "llm-d.ai/v1alpha2", "inference.networking.x-k8s.io/v1alpha2", "llm-d.ai/v1"
    ]
    kind: Literal["InferenceObjective"]
    metadata: ObjectMeta
    spec: ObjectiveSpec = Field(default_factory=ObjectiveSpec)

    @model_validator(mode="after")
    def _pool_shape(self) -> InferenceObjective:
        spec = self.spec
        if self.api_version == "llm-d.ai/v1":
            if spec.pool_ref is not None:
                raise ValueError("llm-d.ai/v1 uses spec.poolRefs or spec.poolSelector")
            if not spec.pool_refs and not spec.pool_selector:
                raise ValueError("llm-d.ai/v1 needs spec.poolRefs or spec.poolSelector")
        elif spec.pool_refs or spec.pool_selector is not None:
            raise ValueError(f"{self.api_version} uses spec.poolRef")
        return self

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def pool_names(self) -> tuple[str, ...]:
        """Pools this objective names (empty with a selector: it applies everywhere)."""
        if self.spec.pool_ref is not None:
            return (self.spec.pool_ref.name,)
        return tuple(ref.name for ref in self.spec.pool_refs)


def _items(documents: list[Any]) -> list[Any]:
    items: list[Any] = []
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            items.extend(doc.get("items") or [])
        else:
            items.append(doc)
    return items


def load_objectives(documents: list[Any], *, path: str = "") -> Loaded[list[InferenceObjective]]:
    """Validate objective documents; names must be unique (lookup is by name only)."""
    objectives: list[InferenceObjective] = []
    warnings: list[str] = []
    for index, item in enumerate(_items(documents)):
        where = join_path(path, index) if path or len(documents) > 1 else f"[{index}]"
        loaded = validate_model(InferenceObjective, item, path=where)
        if any(o.name == loaded.value.name for o in objectives):
            raise ConfigError(f"duplicate objective {loaded.value.name!r}", field=where)
        if loaded.value.api_version.startswith("inference.networking"):
            warnings.append(f"{where}: apiVersion {loaded.value.api_version} is deprecated")
        objectives.append(loaded.value)
        warnings.extend(loaded.warnings)
    return Loaded(objectives, tuple(warnings))
