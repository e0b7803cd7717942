"""The guide's processor configuration, retargeted at the demo's simulator."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources

from sluiceway.config import load_processor_settings
from sluiceway.processor.build import runtime_settings
from sluiceway.processor.specs import ProcessorSpec

__all__ = ["TEAMS", "guide_settings"]

# team -> (tier, reserved concurrency), as the guide's values file configures them.
TEAMS: dict[str, tuple[str, int]] = {
    "premium": ("interactive", 2),
    "standard": ("async", 2),
    "batch": ("batch", 1),
}


def guide_settings(upstream_url: str, *, workers: int | None = None) -> ProcessorSpec:
    """The guide's quota-only values, sending to ``upstream_url`` with ``workers`` in ``teams``."""
    source = resources.files("sluiceway.demo").joinpath("guide-values.yaml")
    with resources.as_file(source) as path:
        loaded = load_processor_settings(config_file=path, env={})
    settings = runtime_settings(loaded.value)
    queues = tuple(replace(q, igw_base_url=upstream_url) for q in settings.queues)
    pools = tuple(
        replace(p, workers=workers) if workers is not None and p.id == "teams" else p
        for p in settings.pools
    )
    return replace(settings, queues=queues, pools=pools)
