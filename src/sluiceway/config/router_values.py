"""The router chart's Helm values as the guide ships them (``values/router/*.yaml``).

Two parts matter here: ``router.epp.pluginsCustomConfig`` maps file names to
``EndpointPickerConfig`` documents (YAML text or objects), and ``router.epp.pluginsConfigFile``
picks one; ``router.modelServers.matchLabels`` selects the model server Pods (the router
discovers them when no other source of endpoints is given). Everything else is
deployment-only and left to the chart.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from sluiceway.config.documents import parse_documents
from sluiceway.config.router import EndpointPickerConfig, load_endpoint_picker_config
from sluiceway.config.strict import CamelModel, LooseCamelModel, join_path
from sluiceway.errors import ConfigError

__all__ = ["RouterValues", "embedded_picker_configs"]


class EppValues(LooseCamelModel):
    plugins_config_file: str = ""
    plugins_custom_config: dict[str, Any] = Field(default_factory=dict)
    flags: dict[str, Any] = Field(default_factory=dict)


class ModelServers(LooseCamelModel):
    match_labels: dict[str, str] = Field(default_factory=dict)


class RouterChart(LooseCamelModel):
    epp: EppValues = Field(default_factory=EppValues)
    model_servers: ModelServers = Field(default_factory=ModelServers)


class RouterValues(CamelModel):
    """A values file of the router chart (``router:`` at the top)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    router: RouterChart

    def check(self, path: str) -> list[str]:
        epp = self.router.epp
        where = join_path(path, "router.epp")
        warnings: list[str] = []
        for _, found in embedded_picker_configs(self, path=path).values():
            warnings.extend(found)
        chosen = epp.plugins_config_file
        if chosen and chosen not in epp.plugins_custom_config:
            warnings.append(
                f"{where}.pluginsConfigFile: {chosen!r} is not embedded here (a chart built-in?)"
            )
        return warnings


def embedded_picker_configs(
    values: RouterValues, *, path: str = ""
) -> dict[str, tuple[EndpointPickerConfig, tuple[str, ...]]]:
    """Each embedded EndpointPickerConfig, validated, by file name (with its warnings)."""
    found: dict[str, tuple[EndpointPickerConfig, tuple[str, ...]]] = {}
    for name, raw in values.router.epp.plugins_custom_config.items():
        where = join_path(path, "router.epp.pluginsCustomConfig", name)
        docs = parse_documents(raw, source=where) if isinstance(raw, str) else [raw]
        if len(docs) != 1:
            raise ConfigError("expected one EndpointPickerConfig document", field=where)
        loaded = load_endpoint_picker_config(docs[0], path=where)
        found[name] = (loaded.value, loaded.warnings)
    return found
