"""A gate context over a private hub whose Prometheus is configured but never reached."""

from __future__ import annotations

from sluiceway.clock import VirtualClock
from sluiceway.gates.context import SIGNALS_SERVICE, GateContext
from sluiceway.signals.refresher import SignalHub
from sluiceway.signals.settings import PrometheusSettings


def context(url: str = "http://127.0.0.1:9", **services: object) -> GateContext:
    clock = VirtualClock()
    hub = SignalHub(clock, PrometheusSettings(url=url, url_field="ap.prometheusURL"))
    return GateContext(
        clock=clock,
        workers=16,
        services={SIGNALS_SERVICE: hub, **services},
        labels={"queue_id": "", "queue_name": "", "pool_name": "teams"},
    )


def queries(ctx: GateContext) -> list[str]:
    """The source keys the hub refreshes for this context."""
    hub = ctx.services[SIGNALS_SERVICE]
    assert isinstance(hub, SignalHub)
    return list(hub.refreshers)
