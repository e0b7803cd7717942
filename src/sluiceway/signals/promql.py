"""A PromQL instant query over the Prometheus HTTP API (``GET /api/v1/query``).

The query is sent verbatim and evaluated at Prometheus's "now". A vector answers one sample
per series; a scalar answers one sample. Anything else (a matrix, a string, an error status,
a timeout, an unreachable server) is an error reading, as is a body that is not the API's JSON.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from sluiceway.signals.base import Reading, Sample
from sluiceway.signals.session import SharedSession
from sluiceway.signals.settings import PromAuth

__all__ = ["PromQLSource", "parse_query_response"]


def _samples(data: Any) -> tuple[Sample, ...]:
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        return (Sample(float(result[1])),)
    if kind != "vector":
        raise ValueError(f"prometheus: result type {kind!r} is not a vector")
    return tuple(
        Sample(float(s["value"][1]), dict(s["metric"]), s["metric"].get("__name__", ""))
        for s in result
    )


def parse_query_response(body: Any) -> tuple[Sample, ...]:
    """The samples of an instant-query answer; raises ValueError for errors and bad shapes."""
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error", "bad answer") if isinstance(body, dict) else "bad answer"
        raise ValueError(f"prometheus: {error}")
    try:
        return _samples(body["data"])
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"prometheus: malformed answer ({exc})") from None


class PromQLSource:
    """One PromQL expression against one Prometheus; ``timeout`` in wall seconds."""

    def __init__(
        self,
        url: str,
        query: str,
        *,
        auth: PromAuth | None = None,
        timeout: float = 10.0,
        session: SharedSession | None = None,
    ) -> None:
        self._endpoint = url.rstrip("/") + "/api/v1/query"
        self._query = query
        self._headers = (auth or PromAuth()).header()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session or SharedSession()
        self._owns = session is None

    @property
    def key(self) -> str:
        return f"promql {self._endpoint} {self._query}"

    @property
    def query(self) -> str:
        return self._query

    async def read(self) -> Reading:
        try:
            http = self._session.get()
            params = {"query": self._query}
            async with http.get(
                self._endpoint, params=params, headers=self._headers, timeout=self._timeout
            ) as resp:
                body = await resp.json(content_type=None)
            return Reading(parse_query_response(body))
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            return Reading(error=str(exc) or type(exc).__name__)

    async def aclose(self) -> None:
        if self._owns:
            await self._session.aclose()
