"""The one error root: callers catch ``SluicewayError`` to handle every deliberate failure.

``SluicewayError``
  ``ConfigError``        a configuration document or flag is invalid; names the field
  ``UnsupportedError``   a known upstream feature sluiceway deliberately does not implement
  ``BrokerError``        a broker operation failed (I/O)
  ``WireError``          an entry or record does not follow the wire format

Secrets: a password or token read from an address is registered with :func:`hide_secret`;
:func:`without_secrets` replaces every registered secret in a text by ``***``. Every error's
text and every log line (``observability/logging.py``) goes through it, so a secret that slips
into a message (a URL shown whole, a client library's repr) never reaches an operator's screen.
"""

from __future__ import annotations

from urllib.parse import quote, quote_plus

__all__ = [
    "BrokerError",
    "ConfigError",
    "SluicewayError",
    "UnsupportedError",
    "WireError",
    "hide_secret",
    "without_secrets",
]

_SECRETS: set[str] = set()
_SHORTEST_SECRET = 3  # shorter "secrets" would blank ordinary words; none is that weak


def hide_secret(secret: str) -> None:
    """Keep ``secret`` (and its percent-encoded spellings) out of every error and log line."""
    if len(secret) < _SHORTEST_SECRET:
        return
    _SECRETS.update({secret, quote(secret, safe=""), quote_plus(secret)})


def without_secrets(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (longest first)."""
    if not _SECRETS or not text:
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


class SluicewayError(Exception):
    """Base of every error sluiceway raises on purpose; its text never shows a secret."""

    def __str__(self) -> str:
        return without_secrets(super().__str__())


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
