"""The router: an OpenAI-compatible gateway with flow control in front of a model-server pool.

``build_router(config, settings, clock)`` gives a :class:`RouterApp` (ASGI) over a
:class:`Gateway`; ``sluiceway router`` serves it. See docs/router.md.

Names are imported on first use, so loading a submodule (e.g. the scorer parameter models the
config registry names) does not pull in the HTTP stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sluiceway.router.app import RouterApp
    from sluiceway.router.build import build_router, load_picker_config
    from sluiceway.router.gateway import Gateway
    from sluiceway.router.load import EndpointLoad, InFlightLoad, LoadSource
    from sluiceway.router.objectives import ObjectiveTable
    from sluiceway.router.settings import RouterSettings

__all__ = [
    "EndpointLoad",
    "Gateway",
    "InFlightLoad",
    "LoadSource",
    "ObjectiveTable",
    "RouterApp",
    "RouterSettings",
    "build_router",
    "load_picker_config",
]

_WHERE = {
    "RouterApp": "app",
    "build_router": "build",
    "load_picker_config": "build",
    "Gateway": "gateway",
    "EndpointLoad": "load",
    "InFlightLoad": "load",
    "LoadSource": "load",
    "ObjectiveTable": "objectives",
    "RouterSettings": "settings",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sluiceway.router' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sluiceway.router.{module}"), name)
