"""Where metric gates query Prometheus, and how often shared signals refresh. Standard library
only, so settings objects can carry them without importing an HTTP client."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

__all__ = ["DEFAULT_PERIOD", "PromAuth", "PrometheusSettings"]

DEFAULT_PERIOD = 1.0  # scaled seconds between reads when the cache TTL is 0


@dataclass(frozen=True, slots=True)
class PromAuth:
    """Optional credentials: a bearer token, or basic ``username`` / ``password``."""

    bearer_token: str = ""
    username: str = ""
    password: str = ""

    def header(self) -> dict[str, str]:
        if self.bearer_token:
            return {"Authorization": f"Bearer {self.bearer_token}"}
        if self.username:
            raw = f"{self.username}:{self.password}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode()}
        return {}


@dataclass(frozen=True, slots=True)
class PrometheusSettings:
    """``url`` ("" = none configured); ``cache_ttl`` in scaled seconds, the refresh period of
    every shared signal (0 = every second of scaled time); ``timeout`` in wall seconds;
    ``url_field``: the setting the user writes the URL in, named by the start-up error."""

    url: str = ""
    cache_ttl: float = 5.0
    timeout: float = 10.0
    auth: PromAuth = field(default_factory=PromAuth)
    url_field: str = "--prometheus-url"

    @property
    def period(self) -> float:
        return self.cache_ttl if self.cache_ttl > 0 else DEFAULT_PERIOD
