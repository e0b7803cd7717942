"""The router: an OpenAI-compatible gateway with flow control in front of a model-server pool.

``build_router(config, settings, clock)`` gives a :class:`RouterApp` (ASGI) over a
:class:`Gateway`; ``sluiceway router`` serves it. See docs/router.md.
"""

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
