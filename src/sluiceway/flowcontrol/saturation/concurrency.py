"""``concurrency-detector``: saturation from in-flight requests and tokens per endpoint.

``requests``: sum of in-flight requests / (endpoints x ``max_concurrency``); ``tokens``: the
same with tokens and ``max_token_concurrency``; ``hybrid``: mean over endpoints of the larger
of the two ratios. An endpoint without data adds capacity but no load; no endpoints -> 1.0.
The router's counters change at dispatch and stream end, so no in-flight credit is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import CapacityView, EndpointSnapshot

__all__ = ["ConcurrencyDetector"]

Mode = Literal["requests", "tokens", "hybrid"]


@dataclass(frozen=True, slots=True)
class ConcurrencyDetector:
    max_concurrency: int = 100
    max_token_concurrency: int = 1_000_000
    mode: Mode = "requests"
    headroom: float = 0.0
    name: str = "concurrency-detector"

    def __post_init__(self) -> None:
        if self.max_concurrency <= 0:
            raise ConfigError("must be > 0", field="maxConcurrency")
        if self.max_token_concurrency <= 0:
            raise ConfigError("must be > 0", field="maxTokenConcurrency")
        if self.headroom < 0:
            raise ConfigError("must be >= 0", field="headroom")

    def view(self, endpoints: Sequence[EndpointSnapshot], now: float) -> CapacityView:
        n = len(endpoints)
        if n == 0:
            return CapacityView(1.0, pool_empty=True)
        req_cost = 1.0 / (n * self.max_concurrency)
        tok_cost = 1.0 / (n * self.max_token_concurrency)
        if self.mode == "requests":
            return CapacityView(self._requests(endpoints) * req_cost, request_cost=req_cost)
        if self.mode == "tokens":
            return CapacityView(self._tokens(endpoints) * tok_cost, token_cost=tok_cost)
        return CapacityView(self._hybrid(endpoints), request_cost=req_cost, token_cost=tok_cost)

    def note_dispatched(self, count: int) -> None:
        return None

    def keep(self, endpoints: Sequence[EndpointSnapshot]) -> list[EndpointSnapshot]:
        """Scheduling filter: endpoints strictly below ``int(cap x (1 + headroom))``."""
        req_cap = int(self.max_concurrency * (1 + self.headroom))
        tok_cap = int(self.max_token_concurrency * (1 + self.headroom))
        out = []
        for e in endpoints:
            req_ok = (e.inflight_requests or 0) < req_cap
            tok_ok = (e.inflight_tokens or 0) < tok_cap
            ok = {"requests": req_ok, "tokens": tok_ok}.get(self.mode, req_ok and tok_ok)
            if ok:
                out.append(e)
        return out

    @staticmethod
    def _requests(endpoints: Sequence[EndpointSnapshot]) -> int:
        return sum(e.inflight_requests or 0 for e in endpoints)

    @staticmethod
    def _tokens(endpoints: Sequence[EndpointSnapshot]) -> int:
        return sum(e.inflight_tokens or 0 for e in endpoints)

    def _hybrid(self, endpoints: Sequence[EndpointSnapshot]) -> float:
        total = 0.0
        for e in endpoints:
            req = (e.inflight_requests or 0) / self.max_concurrency
            tok = (e.inflight_tokens or 0) / self.max_token_concurrency
            total += max(req, tok)
        return total / len(endpoints)
