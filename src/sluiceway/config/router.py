"""The router's ``EndpointPickerConfig`` YAML, in the upstream router's format.

Plugins are declared once (``type``, optional ``name``, ``parameters``) and referenced by name from
``flowControl``; a reference may also name a known type directly (upstream's defaults are
registered implicitly). Quantities accept Kubernetes forms, durations Go forms.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, field_validator

from sluiceway.config.params import Duration, Quantity
from sluiceway.config.registry import PLUGIN_TYPES, validate_params
from sluiceway.config.strict import CamelModel, Loaded, join_path, validate_model
from sluiceway.errors import ConfigError

__all__ = [
    "API_VERSIONS",
    "EndpointPickerConfig",
    "FlowControlConfig",
    "PluginSpec",
    "PriorityBandConfig",
    "load_endpoint_picker_config",
]

API_VERSIONS: Final = ("llm-d.ai/v1", "llm-d.ai/v1alpha1", "inference.networking.x-k8s.io/v1alpha1")
KNOWN_FEATURE_GATES: Final = frozenset({"flowControl"})


class PluginSpec(CamelModel):
    """A plugin instance; ``name`` defaults to the type."""

    type: str
    name: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @property
    def instance_name(self) -> str:
        return self.name or self.type


class ProfilePluginRef(CamelModel):
    plugin_ref: str
    weight: float | None = None


class SchedulingProfile(CamelModel):
    name: str
    plugins: list[ProfilePluginRef] = Field(default_factory=list)


class PriorityBandConfig(CamelModel):
    """A band; caps default to 1G bytes and 5000 requests (0 also means the default)."""

    priority: int = 0
    max_bytes: Quantity | None = Field(default=None, ge=0)
    max_requests: Quantity | None = Field(default=None, ge=0)
    fairness_policy_ref: str = ""
    ordering_policy_ref: str = ""


class PluginRef(CamelModel):
    plugin_ref: str


class LegacySaturationDetector(CamelModel):
    """The legacy top-level detector settings (used when ``flowControl`` names none)."""

    queue_depth_threshold: int | None = Field(default=None, gt=0)
    kv_cache_util_threshold: float | None = Field(default=None, gt=0, le=1)
    metrics_staleness_threshold: Duration | None = None


class FlowControlConfig(CamelModel):
    """``flowControl``: global caps (unset/0 = unlimited), TTLs in seconds, bands, policies."""

    max_bytes: Quantity | None = Field(default=None, ge=0)
    max_requests: Quantity | None = Field(default=None, ge=0)
    default_request_ttl: Duration = Field(default=60.0, alias="defaultRequestTTL")
    no_endpoint_request_ttl: Duration | None = Field(default=None, alias="noEndpointRequestTTL")
    priority_bands: list[PriorityBandConfig] = Field(default_factory=list)
    default_priority_band: PriorityBandConfig | None = None
    default_negative_priority_band: PriorityBandConfig | None = None
    usage_limit_policy_plugin_ref: str = ""
    saturation_detector: PluginRef | None = None
    enable_eviction: bool = False

    @field_validator("priority_bands")
    @classmethod
    def _unique_priorities(cls, bands: list[PriorityBandConfig]) -> list[PriorityBandConfig]:
        seen: set[int] = set()
        for band in bands:
            if band.priority in seen:
                raise ValueError(f"duplicate band priority {band.priority}")
            seen.add(band.priority)
        return bands


class TrustedSources(CamelModel):
    """sluiceway's header trust (docs/design-rules.md rule 28): caller CIDRs and/or a shared-secret
    header."""

    cidrs: list[str] = Field(default_factory=list)
    secret_header: str = ""
    secret: str = ""


class EndpointPickerConfig(CamelModel):
    """The whole document; ``feature_gates`` maps gate names to on/off."""

    api_version: Literal[
        "llm-d.ai/v1", "llm-d.ai/v1alpha1", "inference.networking.x-k8s.io/v1alpha1"
    ]
    kind: Literal["EndpointPickerConfig"] = "EndpointPickerConfig"
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    plugins: list[PluginSpec] = Field(default_factory=list)
    scheduling_profiles: list[SchedulingProfile] = Field(default_factory=list)
    flow_control: FlowControlConfig | None = None
    saturation_detector: LegacySaturationDetector | None = None
    trusted_sources: TrustedSources | None = None

    @field_validator("feature_gates", mode="before")
    @classmethod
    def _feature_gates(cls, value: Any) -> Any:
        return _parse_feature_gates(value)

    @property
    def flow_control_enabled(self) -> bool:
        return self.feature_gates.get("flowControl", False)

    def plugin(self, ref: str) -> PluginSpec | None:
        """The plugin instance ``ref`` names, or an implicit one for a known type name."""
        for spec in self.plugins:
            if spec.instance_name == ref:
                return spec
        return PluginSpec(type=ref) if ref in PLUGIN_TYPES else None

    def check(self, path: str) -> list[str]:
        warnings = _check_plugins(self.plugins, path)
        if self.api_version.startswith("inference.networking"):
            at = join_path(path, "apiVersion")
            warnings.append(f"{at}: {self.api_version} is deprecated; use llm-d.ai/v1")
        _check_refs(self, path)
        unknown = sorted(set(self.feature_gates) - KNOWN_FEATURE_GATES)
        gates_at = join_path(path, "featureGates")
        warnings += [f"{gates_at}: {name!r} is not a gate sluiceway knows" for name in unknown]
        if self.flow_control is not None and not self.flow_control_enabled:
            warnings.append(
                f"{join_path(path, 'flowControl')}: ignored because the flowControl gate is off"
            )
        if self.scheduling_profiles:
            warnings.append(
                f"{join_path(path, 'schedulingProfiles')}: scorer weights map onto sluiceway's "
                "picker where they can"
            )
        return warnings


def _parse_feature_gates(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    gates: dict[str, bool] = {}
    for entry in value:
        if not isinstance(entry, str):
            raise ValueError("entries must be strings: name, name=true or name=false")
        name, sep, flag = entry.partition("=")
        if sep and flag.lower() not in ("true", "false"):
            raise ValueError(f"{entry!r}: the value must be true or false")
        gates[name.strip()] = not sep or flag.lower() == "true"
    return gates


def _check_plugins(plugins: list[PluginSpec], path: str) -> list[str]:
    warnings: list[str] = []
    names: set[str] = set()
    for index, spec in enumerate(plugins):
        where = join_path(path, "plugins", index)
        if spec.instance_name in names:
            raise ConfigError(f"duplicate plugin name {spec.instance_name!r}", field=where)
        names.add(spec.instance_name)
        _, found = validate_params(
            "plugin",
            spec.type,
            spec.parameters,
            field=join_path(where, "parameters"),
            type_field=join_path(where, "type"),
        )
        warnings += found
    return warnings


_Ref = tuple[str, str, str | None]  # reference, dotted path, required category (None = any)


def _band_refs(band: PriorityBandConfig, where: str) -> list[_Ref]:
    return [
        (band.fairness_policy_ref, f"{where}.fairnessPolicyRef", "fairness"),
        (band.ordering_policy_ref, f"{where}.orderingPolicyRef", "ordering"),
    ]


def _flow_control_refs(fc: FlowControlConfig, base: str) -> list[_Ref]:
    refs: list[_Ref] = []
    for index, band in enumerate(fc.priority_bands):
        refs += _band_refs(band, join_path(base, "priorityBands", index))
    templates = {
        "defaultPriorityBand": fc.default_priority_band,
        "defaultNegativePriorityBand": fc.default_negative_priority_band,
    }
    for key, template in templates.items():
        if template is not None:
            refs += _band_refs(template, join_path(base, key))
    refs.append(
        (fc.usage_limit_policy_plugin_ref, f"{base}.usageLimitPolicyPluginRef", "usage-limit")
    )
    if fc.saturation_detector is not None:
        where = f"{base}.saturationDetector.pluginRef"
        refs.append((fc.saturation_detector.plugin_ref, where, "detector"))
    return refs


def _refs(config: EndpointPickerConfig, path: str) -> list[_Ref]:
    refs: list[_Ref] = []
    if config.flow_control is not None:
        refs += _flow_control_refs(config.flow_control, join_path(path, "flowControl"))
    for index, profile in enumerate(config.scheduling_profiles):
        for inner, ref in enumerate(profile.plugins):
            where = join_path(path, "schedulingProfiles", index, "plugins", inner, "pluginRef")
            refs.append((ref.plugin_ref, where, None))
    return [r for r in refs if r[0]]


def _check_refs(config: EndpointPickerConfig, path: str) -> None:
    for ref, where, category in _refs(config, path):
        spec = config.plugin(ref)
        if spec is None:
            raise ConfigError(f"no plugin named {ref!r}", field=where)
        actual = PLUGIN_TYPES.get(spec.type)
        if category is not None and actual != category:
            raise ConfigError(f"{ref!r} is a {actual} plugin, not a {category} one", field=where)


def load_endpoint_picker_config(data: Any, *, path: str = "") -> Loaded[EndpointPickerConfig]:
    """Validate an EndpointPickerConfig document (already parsed from YAML)."""
    return validate_model(EndpointPickerConfig, data, path=path)
