"""The one error root: callers catch ``SluicewayError`` to handle every deliberate failure.

``SluicewayError``
  ``ConfigError``        a configuration document or flag is invalid; names the field
  ``UnsupportedError``   a known upstream feature sluiceway deliberately does not implement
  ``BrokerError``        a broker operation failed (I/O)
  ``WireError``          an entry or record does not follow the wire format
"""

from __future__ import annotations

__all__ = ["BrokerError", "ConfigError", "SluicewayError", "UnsupportedError", "WireError"]


class SluicewayError(Exception):
    """Base of every error sluiceway raises on purpose."""


class ConfigError(SluicewayError):
    """Invalid configuration. ``field`` is the dotted path of the offending key, when known."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class UnsupportedError(ConfigError):
    """A known upstream feature that sluiceway does not implement (docs/design-rules.md rules 6,
    16)."""


class BrokerError(SluicewayError):
    """A broker could not complete an operation."""


class WireError(SluicewayError):
    """Data that does not follow the wire contract."""
