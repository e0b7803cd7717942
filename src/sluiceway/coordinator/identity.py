"""Who is calling: the tenant of a request.

With ``api_keys`` configured the key decides (``Authorization: Bearer <key>``, as the ``openai``
client sends it, or ``x-api-key``); a missing or unknown key is 401 and the tenant header is
ignored. Without keys the tenant header is trusted and a missing one means ``default``. A tenant
containing ``:`` is 400: it would break the ``<tenant>:<id>`` envelope ids and mailbox keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from sluiceway.coordinator.answers import RequestRejected

__all__ = ["DEFAULT_TENANT", "TenantIdentity"]

DEFAULT_TENANT: Final = "default"
_BEARER: Final = "bearer "


class TenantIdentity:
    """Resolves the tenant of a request from its headers (lower-case names)."""

    def __init__(self, *, tenant_header: str, api_keys: Mapping[str, str]) -> None:
        self._tenant_header = tenant_header
        self._keys = dict(api_keys)

    @property
    def uses_keys(self) -> bool:
        return bool(self._keys)

    def has_key(self, headers: Mapping[str, str]) -> bool:
        """Whether ``headers`` carry a configured key (the router's check when mounted)."""
        key = _api_key(headers)
        return bool(key) and key in self._keys

    def tenant(self, headers: Mapping[str, str]) -> str:
        tenant = self._from_key(headers) if self._keys else self._from_header(headers)
        if ":" in tenant:
            raise RequestRejected(400, "invalid_tenant", f"tenant {tenant!r} must not contain ':'")
        return tenant

    def _from_key(self, headers: Mapping[str, str]) -> str:
        key = _api_key(headers)
        tenant = self._keys.get(key) if key else None
        if tenant is None:
            raise RequestRejected(401, "invalid_api_key", "missing or unknown API key")
        return tenant

    def _from_header(self, headers: Mapping[str, str]) -> str:
        return (headers.get(self._tenant_header) or "").strip() or DEFAULT_TENANT


def _api_key(headers: Mapping[str, str]) -> str:
    auth = headers.get("authorization") or ""
    if auth.lower().startswith(_BEARER):
        return auth[len(_BEARER) :].strip()
    return (headers.get("x-api-key") or "").strip()
