"""One Redis address form for every command: standalone, TLS, mutual TLS and Sentinel.

The processor's ``url``, the coordinator's ``redis_url``, ``--url`` / ``REDIS_URL`` of every
command and the quota-gate and ledger addresses are all read here, so a managed Redis is
described the same way everywhere (docs/operations.md, "Managed Redis")::

    redis://[user[:password]@]host[:port][/db][?option=value&...]
    rediss://...                                   TLS
    unix:///path/redis.sock[?db=N]
    redis+sentinel://[user[:password]@]host:port[,host:port...]/master[/db][?...]
    rediss+sentinel://...                          TLS to the master and the sentinels

The options are :data:`OPTIONS`. TLS options on a plain ``redis://`` address, Sentinel
options without Sentinel, an unknown option or a TLS file that does not exist are errors
naming the field at start-up. Every password seen here is registered with
:func:`sluiceway.errors.hide_secret` before anything can show it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from sluiceway.config.urls import mask_credentials
from sluiceway.errors import ConfigError

__all__ = [
    "OPTIONS",
    "SENTINEL_SCHEMES",
    "RedisAddress",
    "TlsFiles",
    "parse_redis_address",
]

SENTINEL_SCHEMES: Final = ("redis+sentinel", "rediss+sentinel")
_SCHEMES: Final = ("redis", "rediss", "unix", *SENTINEL_SCHEMES)
_TLS_OPTIONS: Final = {
    "ssl_ca_certs": "the CA file the server's certificate must chain to",
    "ssl_certfile": "the client certificate (mutual TLS)",
    "ssl_keyfile": "the client certificate's key (mutual TLS)",
    "ssl_server_name": "the name the server's certificate carries, when not the host",
    "ssl_check_hostname": "true (default) or false",
    "ssl_cert_reqs": "required (default), optional or none",
}
_SENTINEL_OPTIONS: Final = {
    "sentinel_username": "the sentinels' ACL user",
    "sentinel_password": "the sentinels' password (their requirepass or ACL user's)",
    "sentinel_ssl": "TLS to the sentinels: true or false (default: as the scheme)",
}
OPTIONS: Final = {
    **_TLS_OPTIONS,
    **_SENTINEL_OPTIONS,
    "username": "the ACL user (instead of user@ in the address)",
    "password": "the password (instead of :password@ in the address)",
    "db": "the database number (instead of the path)",
    "socket_timeout": "seconds a command may take",
    "socket_connect_timeout": "seconds a connection may take",
}
"""Every query option an address may carry, and what it means."""
_FILES: Final = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
_TRUE: Final = ("true", "1", "yes")
_BOOLS: Final = (*_TRUE, "false", "0", "no")


@dataclass(frozen=True)
class TlsFiles:
    """TLS settings of one connection (empty: the system's CAs, no client certificate)."""

    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    server_name: str = ""
    check_hostname: bool = True
    cert_reqs: str = "required"


@dataclass(frozen=True)
class RedisAddress:
    """A parsed Redis address; ``shown`` is the URL with its secrets masked, for logs."""

    scheme: str
    hosts: tuple[tuple[str, int], ...]
    shown: str
    path: str = ""
    db: int = 0
    username: str = ""
    password: str = field(default="", repr=False)
    tls: TlsFiles | None = None
    master_name: str = ""
    sentinel_username: str = ""
    sentinel_password: str = field(default="", repr=False)
    sentinel_tls: bool = False
    socket_timeout: float | None = None
    socket_connect_timeout: float | None = None

    @property
    def sentinel(self) -> bool:
        """True when the master is found through sentinels (``hosts`` are the sentinels)."""
        return bool(self.master_name)

    def with_sentinels(self, addrs: list[str], master_name: str, *, field: str) -> RedisAddress:
        """This address's credentials, TLS, DB and sentinel options, the master found through
        ``addrs`` (the processor's ``mode: sentinel`` with ``addrs`` and ``master_name``)."""
        hosts = tuple(_host_port(a, 26379, field=field) for a in addrs)
        return replace(self, hosts=hosts, master_name=master_name)


def _bool(name: str, value: str, *, field: str) -> bool:
    if value.lower() not in _BOOLS:
        raise ConfigError(f"option {name}={value!r}: use true or false", field=field)
    return value.lower() in _TRUE


def _float(name: str, value: str, *, field: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"option {name}={value!r} is not a number", field=field) from None


def _host_port(text: str, default_port: int, *, field: str) -> tuple[str, int]:
    """``host[:port]`` or ``[v6]:port``."""
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    if not host:
        raise ConfigError(f"{text!r}: no host", field=field)
    if not port:
        return host, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{text!r}: the port is not a number from 1 to 65535", field=field)
    return host, int(port)


def _options(query: str, *, field: str) -> dict[str, str]:
    found = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(found) - set(OPTIONS))
    if unknown:
        known = ", ".join(OPTIONS)
        raise ConfigError(f"unknown option {unknown[0]!r} (known: {known})", field=field)
    return found


def _tls(options: dict[str, str], tls: bool, *, field: str) -> TlsFiles | None:
    given = sorted(set(options) & set(_TLS_OPTIONS))
    if not tls:
        if given:
            raise ConfigError(f"option {given[0]} needs a rediss:// address", field=field)
        return None
    for name in _FILES:
        path = options.get(name, "")
        if path and not os.path.isfile(path):
            raise ConfigError(f"option {name}: no file at {path}", field=field)
    if bool(options.get("ssl_certfile")) != bool(options.get("ssl_keyfile")):
        raise ConfigError("mutual TLS needs both ssl_certfile and ssl_keyfile", field=field)
    reqs = options.get("ssl_cert_reqs", "required")
    if reqs not in ("required", "optional", "none"):
        raise ConfigError(f"option ssl_cert_reqs={reqs!r}: required, optional or none", field=field)
    check = options.get("ssl_check_hostname", "true")
    return TlsFiles(
        ca_file=options.get("ssl_ca_certs", ""),
        cert_file=options.get("ssl_certfile", ""),
        key_file=options.get("ssl_keyfile", ""),
        server_name=options.get("ssl_server_name", ""),
        check_hostname=_bool("ssl_check_hostname", check, field=field),
        cert_reqs=reqs,
    )


def _db(text: str, *, field: str) -> int:
    if not text:
        return 0
    if not text.isdigit():
        raise ConfigError(f"database {text!r} is not a number", field=field)
    return int(text)


def parse_redis_address(url: str, *, field: str, sentinel_elsewhere: bool = False) -> RedisAddress:
    """``url`` read as one of the forms above; ConfigError naming ``field`` otherwise (the
    message shows the address with its secrets masked). ``sentinel_elsewhere``: the sentinels
    are named apart (the processor's ``mode: sentinel``), so sentinel options are welcome."""
    shown = mask_credentials(url)  # registers the secrets first
    scheme, sep, _ = url.partition("://")
    if not sep or scheme not in _SCHEMES:
        hint = f" (did you mean redis://{shown}?)" if not sep else ""
        raise ConfigError(
            f"{shown!r} is not a redis://, rediss://, unix://, redis+sentinel:// or "
            f"rediss+sentinel:// URL{hint}",
            field=field,
        )
    parts = urlsplit(url)
    options = _options(parts.query, field=field)
    sentinel = scheme in SENTINEL_SCHEMES
    if sentinel and sentinel_elsewhere:
        raise ConfigError("name the sentinels once: mode sentinel or a sentinel URL", field=field)
    given = sorted(set(options) & set(_SENTINEL_OPTIONS))
    if given and not (sentinel or sentinel_elsewhere):
        raise ConfigError(f"option {given[0]} needs a redis+sentinel:// address", field=field)
    tls = _tls(options, scheme.startswith("rediss"), field=field)
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    master = segments.pop(0) if sentinel and segments else ""
    if sentinel and not master:
        raise ConfigError(f"{shown!r}: name the master (…/MASTER[/DB])", field=field)
    hosts: tuple[tuple[str, int], ...] = ()
    if scheme != "unix":
        port = 26379 if sentinel else 6379
        hosts = tuple(_host_port(h, port, field=field) for h in hostlist.split(",") if h)
        if not hosts:
            raise ConfigError(f"{shown!r}: no host", field=field)
    timeouts = {
        name: _float(name, options[name], field=field)
        for name in ("socket_timeout", "socket_connect_timeout")
        if name in options
    }
    sentinel_tls = options.get("sentinel_ssl", "true" if tls else "false")
    return RedisAddress(
        scheme=scheme,
        hosts=hosts,
        shown=shown,
        path=unquote(parts.path) if scheme == "unix" else "",
        db=_db(options.get("db") or ("" if scheme == "unix" else "/".join(segments)), field=field),
        username=options.get("username") or unquote(user),
        password=options.get("password") or unquote(password),
        tls=tls,
        master_name=master,
        sentinel_username=options.get("sentinel_username", ""),
        sentinel_password=options.get("sentinel_password", ""),
        sentinel_tls=_bool("sentinel_ssl", sentinel_tls, field=field),
        **timeouts,
    )
