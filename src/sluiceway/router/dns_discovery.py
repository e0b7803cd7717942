"""``--endpoints-dns``: every address of a DNS name is a model server (a headless Service).

Each ``http://NAME:PORT`` is resolved at start and then every ``--dns-interval`` (scaled
seconds); each address it resolves to becomes ``http://ADDRESS:PORT`` (IPv6 addresses in
brackets). A name that fails to resolve keeps its last set of endpoints: the failure is logged
once, and once more when the name resolves again, not on every interval.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.router.membership import Membership

__all__ = ["DNS_SOURCE", "DnsDiscovery", "DnsName", "Resolver", "system_resolver"]

log = logging.getLogger(__name__)

DNS_SOURCE: Final = "--endpoints-dns"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
# The addresses of (host, port): what the system resolver (or a test's) answers.
Resolver = Callable[[str, int], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True)
class DnsName:
    """One ``--endpoints-dns`` entry: the scheme and port its endpoints take."""

    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> DnsName:
        """``http://NAME:PORT`` (or https; the port defaults to the scheme's)."""
        parts = urlsplit(text.strip())
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(f"{text!r}: bad port", field=DNS_SOURCE) from None
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ConfigError(f"{text!r} is not http://NAME:PORT", field=DNS_SOURCE)
        if parts.path.strip("/") or parts.query:
            raise ConfigError(f"{text!r}: give no path, only http://NAME:PORT", field=DNS_SOURCE)
        return cls(parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme])

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def urls(self, addresses: Sequence[str]) -> list[str]:
        """One endpoint URL per address, sorted, each once."""
        return sorted({f"{self.scheme}://{_bracketed(a)}:{self.port}" for a in addresses})


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6), through the system's resolver."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class DnsDiscovery:
    """Resolves ``names`` every ``interval`` scaled seconds and publishes the union of their
    endpoints to ``membership`` as one source. ``timeout``: scaled seconds one resolution may
    take (default: the interval)."""

    def __init__(
        self,
        names: Sequence[DnsName],
        membership: Membership,
        clock: Clock,
        *,
        interval: float = 5.0,
        timeout: float | None = None,
        resolver: Resolver = system_resolver,
    ) -> None:
        if interval <= 0:
            raise ConfigError("must be > 0", field="--dns-interval")
        self._names = tuple(names)
        self._membership = membership
        self._clock = clock
        self._interval = interval
        self._timeout = timeout or interval
        self._resolver = resolver
        self._found: dict[DnsName, list[str]] = {}
        self._failing: set[DnsName] = set()

    async def run(self) -> None:
        """Resolve now, then every interval, until cancelled."""
        while True:
            await self.resolve_once()
            await self._clock.sleep(self._interval)

    async def resolve_once(self) -> None:
        """Resolve every name (at once) and publish what they resolve to."""
        await asyncio.gather(*(self._resolve(name) for name in self._names))
        urls = [u for name in self._names for u in self._found.get(name, [])]
        await self._membership.publish(DNS_SOURCE, urls)

    async def _resolve(self, name: DnsName) -> None:
        kept = self._found.get(name, [])
        try:
            limit = self._clock.to_wall(self._timeout)
            addresses = await asyncio.wait_for(self._resolver(name.host, name.port), limit)
        except (OSError, TimeoutError) as exc:  # socket.gaierror is an OSError
            if name not in self._failing:
                self._failing.add(name)
                why = str(exc) or type(exc).__name__
                log.warning(
                    "dns %s: cannot resolve (%s); keeping its %d endpoints", name, why, len(kept)
                )
            return
        urls = name.urls(addresses)
        if name in self._failing:
            self._failing.discard(name)
            log.info("dns %s resolves again: %d endpoints", name, len(urls))
        elif urls != kept:
            log.info(
                "dns %s: %d endpoints (%d new, %d gone)",
                name,
                len(urls),
                len(set(urls) - set(kept)),
                len(set(kept) - set(urls)),
            )
        self._found[name] = urls
