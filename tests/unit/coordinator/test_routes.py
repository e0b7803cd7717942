from __future__ import annotations

from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.routes import Placement, TenantRoutes


def params(**kw: object) -> AsyncBrokerParams:
    return AsyncBrokerParams.model_validate({"redis_url": "memory://", **kw})


GUIDE = params(
    routes=[
        {"tenant": "realtime", "tier": "interactive"},
        {"tenant": "premium", "queue": "team-premium", "tier": "interactive"},
        {"tenant": "batch", "queue": "team-batch", "tier": "batch"},
    ],
    default_queue="team-batch",
    default_tier="batch",
    objectives={"interactive": {"reserved": "ri", "overflow": "oi"}},
)


def test_first_matching_route_wins_and_empty_fields_take_the_defaults() -> None:
    routes = TenantRoutes(GUIDE)
    assert routes.place(model="m", tenant="premium") == Placement("team-premium", "interactive")
    assert routes.place(model="m", tenant="realtime") == Placement("team-batch", "interactive")
    assert routes.place(model="m", tenant="someone") == Placement("team-batch", "batch")


def test_objectives_by_tier_and_class() -> None:
    routes = TenantRoutes(GUIDE)
    assert routes.objective("interactive", reserved=True) == "ri"
    assert routes.objective("interactive", reserved=False) == "oi"
    assert routes.objective("batch", reserved=True) == ""


def test_without_named_models_every_model_is_served() -> None:
    routes = TenantRoutes(GUIDE)
    assert routes.models == ()
    assert routes.serves("anything")


def test_named_models_are_the_only_ones_served() -> None:
    routes = TenantRoutes(
        params(
            routes=[{"model": "a", "queue": "qa"}, {"model": "b"}, {"model": "a", "tenant": "x"}]
        )
    )
    assert routes.models == ("a", "b")
    assert routes.serves("b") and not routes.serves("c")
    assert routes.place(model="a", tenant="x") == Placement("qa", "")
