"""The route table: vLLM's POST routes proxied with a cost, the router's own routes answered."""

from __future__ import annotations

from sluiceway.router.request_facts import GENERATION
from sluiceway.router.routes import ROUTES, Handler


def test_every_proxied_route_is_post_with_a_cost_and_needs_a_key() -> None:
    proxied = {path for path, route in ROUTES.items() if route.handler is Handler.PROXY}
    assert proxied >= {
        "/v1/completions",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/embeddings",
        "/tokenize",
        "/detokenize",
        "/score",
        "/v1/score",
        "/rerank",
        "/v1/rerank",
        "/v2/rerank",
    }
    for path in proxied:
        route = ROUTES[path]
        assert route.methods == ("POST",) and route.cost is not None and not route.keyless


def test_only_generation_asks_for_usage_and_only_it_and_responses_cost_output() -> None:
    writes = {p for p, r in ROUTES.items() if r.cost is not None and r.cost.outputs}
    assert writes == {"/v1/completions", "/v1/chat/completions", "/v1/responses"}
    asks = {p for p, r in ROUTES.items() if r.cost is not None and r.cost.ask_usage}
    assert asks == {"/v1/completions", "/v1/chat/completions"}
    assert ROUTES["/v1/completions"].cost is GENERATION


def test_the_routers_own_routes() -> None:
    assert ROUTES["/v1/models"].handler is Handler.MODELS and not ROUTES["/v1/models"].keyless
    probes = {p for p, r in ROUTES.items() if r.keyless}
    assert probes == {"/health", "/healthz", "/readyz", "/metrics"}
    assert all(ROUTES[p].methods == ("GET", "HEAD") and ROUTES[p].cost is None for p in probes)
    assert ROUTES["/health"].handler is Handler.ALIVE  # vLLM's: 200, empty
