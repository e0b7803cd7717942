"""Address checks shared by config files and command-line flags.

A Redis address needs its scheme (redis-py cannot tell a host from a path without one); a
coordinator's broker address names its transport by its scheme; an upstream needs http(s); a
SQLite database is a file path, never something that looks like a URL (it would otherwise
become a directory tree named after the URL). Credentials are masked before an address is
logged, whatever its form (no scheme, several hosts, ``?password=``, percent-encoded), and
registered with :func:`sluiceway.errors.hide_secret` so no error or log line shows them.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from sluiceway.errors import ConfigError, hide_secret

__all__ = [
    "BROKER_SCHEMES",
    "REDIS_SCHEMES",
    "broker_transport",
    "check_http_url",
    "check_redis_url",
    "check_sqlite_path",
    "mask_credentials",
    "url_secrets",
]

REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+sentinel://", "rediss+sentinel://")
_SECRET_WORDS: Final = ("password", "token", "secret")
_NETLOC: Final = re.compile(r"^([^/?]*)(.*)$", re.S)
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# The coordinator's ``redis_url``: each scheme and the broker transport it names.
BROKER_SCHEMES: Final = {
    "redis://": "redis-sortedset",
    "rediss://": "redis-sortedset",
    "redis+sentinel://": "redis-sortedset",
    "rediss+sentinel://": "redis-sortedset",
    "memory://": "memory",
    "sqlite://": "sqlite",
    "postgres://": "postgres",
    "postgresql://": "postgres",
}


def broker_transport(url: str) -> str | None:
    """The broker transport ``url``'s scheme names (:data:`BROKER_SCHEMES`), None for none."""
    return next((t for scheme, t in BROKER_SCHEMES.items() if url.startswith(scheme)), None)


def check_redis_url(url: str, *, field: str) -> str:
    """``url`` when it is a Redis address (:mod:`sluiceway.config.redis_address`, options
    included); ConfigError naming ``field`` otherwise."""
    from sluiceway.config.redis_address import parse_redis_address

    parse_redis_address(url, field=field)
    return url


def check_http_url(url: str, *, field: str) -> str:
    """``url`` when it is an http:// or https:// address; ConfigError otherwise."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"{mask_credentials(url)!r} is not an http:// or https:// URL", field=field
        )
    return url


def check_sqlite_path(path: str, *, field: str) -> str:
    """``path`` when it names a file (``sqlite://`` URLs allowed); refuses other URLs."""
    if _URL_LIKE.match(path) and not path.startswith("sqlite://"):
        raise ConfigError(
            f"{mask_credentials(path)!r} looks like a URL; the sqlite transport takes a file path",
            field=field,
        )
    return path


def _secret_option(name: str) -> bool:
    return any(word in name.lower() for word in _SECRET_WORDS)


def url_secrets(url: str) -> list[str]:
    """The passwords and tokens ``url`` carries (userinfo and query), as written and decoded;
    a URL without a scheme is read as if it had one."""
    parts = urlsplit(url if "://" in url else f"redis://{url}")
    userinfo = parts.netloc.rpartition("@")[0]
    found = [userinfo.partition(":")[2]] if ":" in userinfo else []
    found += [value for name, value in parse_qsl(parts.query) if _secret_option(name)]
    found += [raw.partition("=")[2] for raw in parts.query.split("&") if _secret_option(raw)]
    return [s for secret in found if secret for s in {secret, unquote(secret)}]


def mask_credentials(url: str) -> str:
    """``url`` with every password or token replaced by ``***`` (user names stay, for
    diagnosis); its secrets are registered (:func:`sluiceway.errors.hide_secret`)."""
    secrets = url_secrets(url)
    for secret in secrets:
        hide_secret(secret)
    if not secrets:
        return url
    scheme, sep, rest = url.rpartition("://")
    netloc, tail = _NETLOC.match(rest).groups()  # type: ignore[union-attr]
    user, at, hosts = netloc.rpartition("@")
    if ":" in user:
        user = user.partition(":")[0] + ":***"
    base, q, query = tail.partition("?")
    if query:
        query = "&".join(
            f"{n.partition('=')[0]}=***" if _secret_option(n.partition("=")[0]) else n
            for n in query.split("&")
        )
    return f"{scheme}{sep}{user}{at}{hosts}{base}{q}{query}"
