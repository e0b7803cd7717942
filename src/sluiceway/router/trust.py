"""Which callers may set the objective and fairness headers.

With no trusted sources configured every caller is trusted (as upstream; the router warns at
start-up). With CIDRs and/or a shared-secret header, a caller that matches neither has its
objective and fairness headers removed before anything reads them.

Behind a mounted coordinator's API keys (:meth:`HeaderTrust.behind_keys`) no trusted sources
means nobody is trusted: a key says which tenant calls, not which priority it may pick, and a
keyed caller that skips the mode header must not choose its objective and fairness id by
itself. The key headers never travel upstream then.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, replace

from sluiceway.errors import ConfigError
from sluiceway.wire import headers as h

__all__ = ["IDENTITY_HEADERS", "KEY_HEADERS", "HeaderTrust"]

# Lower-case names as raw ASGI headers carry them.
IDENTITY_HEADERS: frozenset[bytes] = frozenset(
    name.encode() for name in (*h.OBJECTIVE_ALIASES, *h.FAIRNESS_ID_ALIASES)
)

# Where an API key travels (``Authorization: Bearer <key>`` or ``x-api-key``), as the
# coordinator's tenant identity reads it.
KEY_HEADERS: frozenset[bytes] = frozenset({b"authorization", b"x-api-key"})

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class HeaderTrust:
    """``networks``: trusted caller networks; ``secret_header`` / ``secret``: a header whose
    value must equal the secret. Both empty: trust everyone, unless ``keyed`` (API keys guard
    the listener): then trust nobody."""

    networks: tuple[_Network, ...] = ()
    secret_header: bytes = b""
    secret: bytes = b""
    keyed: bool = False

    @classmethod
    def build(cls, cidrs: Iterable[str], secret_header: str = "", secret: str = "") -> HeaderTrust:
        """Validate the settings; ConfigError names the bad field."""
        nets: list[_Network] = []
        for i, cidr in enumerate(cidrs):
            try:
                nets.append(ipaddress.ip_network(cidr, strict=False))
            except ValueError as exc:
                raise ConfigError(str(exc), field=f"trustedSources.cidrs[{i}]") from None
        if bool(secret_header) != bool(secret):
            raise ConfigError("secretHeader and secret go together", field="trustedSources")
        return cls(tuple(nets), secret_header.lower().encode(), secret.encode())

    def behind_keys(self) -> HeaderTrust:
        """This trust once API keys guard the listener (see the module docstring)."""
        return replace(self, keyed=True)

    @property
    def open(self) -> bool:
        """True when every caller is trusted."""
        return not self.keyed and not self.networks and not self.secret_header

    def trusted(self, client_host: str | None, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        """Whether a caller at ``client_host`` with raw ``headers`` is trusted."""
        if self.open:
            return True
        if self.secret_header:
            for name, value in headers:
                if name == self.secret_header and hmac.compare_digest(value, self.secret):
                    return True
        return self._in_networks(client_host)

    def filter(
        self, client_host: str | None, headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        """``headers`` without identity headers unless the caller is trusted; the shared
        secret (and, behind keys, the key) never travels upstream."""
        if self.open:
            return headers
        keep_identity = self.trusted(client_host, headers)
        private = KEY_HEADERS | {self.secret_header} if self.keyed else {self.secret_header}
        return [
            (n, v)
            for n, v in headers
            if n not in private and (keep_identity or n not in IDENTITY_HEADERS)
        ]

    def _in_networks(self, host: str | None) -> bool:
        if not host or not self.networks:
            return False
        try:
            addr = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(addr in net for net in self.networks)
