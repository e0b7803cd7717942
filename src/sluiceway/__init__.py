"""sluiceway: fair, priority- and quota-aware sharing of LLM model server pools."""

from __future__ import annotations

from sluiceway.clock import Clock, RealClock, VirtualClock
from sluiceway.errors import (
    BrokerError,
    ConfigError,
    SluicewayError,
    UnsupportedError,
    WireError,
)

__version__ = "0.1.0"

__all__ = [
    "BrokerError",
    "Clock",
    "ConfigError",
    "RealClock",
    "SluicewayError",
    "UnsupportedError",
    "VirtualClock",
    "WireError",
    "__version__",
]
