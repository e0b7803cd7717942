"""The router's route table: per path, the methods it takes, what answers it, and how a
proxied request's cost is read (pure data).

Proxied routes are vLLM's OpenAI-compatible POST routes: each goes through flow control with
a cost estimated from its body by its :class:`~sluiceway.router.request_facts.CostRule`, then
to an endpoint serving its model. Everything else is answered by the router itself. Probes
carry no API key, on the router as on the coordinator.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from sluiceway.router.request_facts import GENERATION, CostRule, input_only

__all__ = ["ROUTES", "Handler", "RouteSpec"]


class Handler(enum.Enum):
    """What answers a route."""

    PROXY = "proxy"  # flow control, then a model server
    MODELS = "models"  # the models the pool serves, as learned
    HEALTH = "health"  # 200 while the process runs, {"status": "ok"}
    ALIVE = "alive"  # 200 while the process runs, empty (vLLM's /health)
    READY = "ready"  # 200 while ready, else 503 with the reason
    METRICS = "metrics"  # Prometheus text format


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """``cost``: how a proxied body is costed (None for the router's own routes); ``keyless``:
    answered without an API key (probes and scrapers)."""

    methods: tuple[str, ...]
    handler: Handler
    cost: CostRule | None = None
    keyless: bool = False


_POST: Final = ("POST",)
_PROBE: Final = ("GET", "HEAD")


def _proxied(cost: CostRule) -> RouteSpec:
    return RouteSpec(_POST, Handler.PROXY, cost)


def _probe(handler: Handler) -> RouteSpec:
    return RouteSpec(_PROBE, handler, keyless=True)


_EMBED: Final = _proxied(input_only("input", "messages"))
_SCORE: Final = _proxied(input_only("text_1", "text_2", "data_1", "data_2", "queries", "documents"))
_RERANK: Final = _proxied(input_only("query", "documents"))

ROUTES: Final[dict[str, RouteSpec]] = {
    "/v1/completions": _proxied(GENERATION),
    "/v1/chat/completions": _proxied(GENERATION),
    # The Responses API: instructions and input, capped by max_output_tokens (16 when unset,
    # as completions). Its stream ends with response.completed, not [DONE].
    "/v1/responses": _proxied(
        CostRule(("instructions", "input"), ("max_output_tokens",), GENERATION.default_output)
    ),
    "/v1/embeddings": _EMBED,
    "/pooling": _EMBED,
    "/classify": _EMBED,
    "/score": _SCORE,
    "/v1/score": _SCORE,
    "/rerank": _RERANK,
    "/v1/rerank": _RERANK,
    "/v2/rerank": _RERANK,
    "/tokenize": _proxied(input_only("prompt", "messages")),
    "/detokenize": _proxied(input_only("tokens")),
    "/v1/models": RouteSpec(("GET",), Handler.MODELS),
    "/health": _probe(Handler.ALIVE),
    "/healthz": _probe(Handler.HEALTH),
    "/readyz": _probe(Handler.READY),
    "/metrics": _probe(Handler.METRICS),
}
