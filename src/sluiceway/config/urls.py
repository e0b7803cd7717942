"""Address checks shared by config files and command-line flags.

A Redis address needs its scheme (redis-py cannot tell a host from a path without one); a
coordinator's broker address names its transport by its scheme; an upstream needs http(s); a
SQLite database is a file path, never something that looks like a URL (it would otherwise
become a directory tree named after the URL). Credentials are masked before an address is
logged.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from sluiceway.errors import ConfigError

__all__ = [
    "BROKER_SCHEMES",
    "REDIS_SCHEMES",
    "broker_transport",
    "check_http_url",
    "check_redis_url",
    "check_sqlite_path",
    "mask_credentials",
]

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# The coordinator's ``redis_url``: each scheme and the broker transport it names.
BROKER_SCHEMES: Final = {
    "redis://": "redis-sortedset",
    "rediss://": "redis-sortedset",
    "memory://": "memory",
    "sqlite://": "sqlite",
    "postgres://": "postgres",
    "postgresql://": "postgres",
}


def broker_transport(url: str) -> str | None:
    """The broker transport ``url``'s scheme names (:data:`BROKER_SCHEMES`), None for none."""
    return next((t for scheme, t in BROKER_SCHEMES.items() if url.startswith(scheme)), None)


def check_redis_url(url: str, *, field: str) -> str:
    """``url`` when it is a redis://, rediss:// or unix:// address; ConfigError otherwise."""
    if not url.startswith(REDIS_SCHEMES):
        hint = f" (did you mean redis://{url}?)" if "://" not in url else ""
        raise ConfigError(f"{url!r} is not a redis://, rediss:// or unix:// URL{hint}", field=field)
    return url


def check_http_url(url: str, *, field: str) -> str:
    """``url`` when it is an http:// or https:// address; ConfigError otherwise."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{url!r} is not an http:// or https:// URL", field=field)
    return url


def check_sqlite_path(path: str, *, field: str) -> str:
    """``path`` when it names a file (``sqlite://`` URLs allowed); refuses other URLs."""
    if _URL_LIKE.match(path) and not path.startswith("sqlite://"):
        raise ConfigError(
            f"{path!r} looks like a URL; the sqlite transport takes a file path", field=field
        )
    return path


def mask_credentials(url: str) -> str:
    """``url`` with any password replaced by ``***`` (user names stay, for diagnosis)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{user}:***@{host}{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
