"""What every metric gate shares: a budget computed from one shared signal, with a fallback.

A metric gate reads the latest value of its signal's refresher (never a query per message) and
maps it to a budget in [0, 1]. While the signal is blind (an error, a timeout, no series, NaN)
the gate answers its ``fallback``, in budget units (1 open, 0 closed; unset = 0, closed), and
says so: ``gate_metric_source_available`` drops to 0 and one log line marks the entry into and
the exit from fallback. ``gate_metric_value`` / ``gate_metric_threshold`` carry the last value
read and the gate's threshold, labelled with the owner and ``inference_pool``.

In-flight credit: a signal lags the requests it measures (a scrape, then a refresh), so each
request this gate admitted within the last three refresh periods and not yet finished lowers the
budget by 1/W. A stale open signal therefore lets at most about half the pool through per lag
instead of all of it; once the signal has caught up (or the request has finished) the credit
lapses, so a steadily open signal still opens the whole pool. With M live processors on the
pool each admission lowers the budget by M/W: it comes off this processor's share, a 1/M part
of the pool's target (``pool_share``), so the pool as a whole keeps the credit one processor
would.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Protocol, cast

from sluiceway.errors import ConfigError
from sluiceway.gates.base import CONTINUE, REFUSE, BudgetGate, Decision, GateRequest, Holdings
from sluiceway.gates.context import GAUGES_SERVICE, SIGNALS_SERVICE, GateContext
from sluiceway.signals.base import MetricSource, Reading
from sluiceway.signals.refresher import Refresher, SignalHub

__all__ = [
    "MetricGate",
    "SignalGauges",
    "clamp01",
    "prometheus_source",
    "signal_hub",
]

log = logging.getLogger(__name__)

CREDIT_PERIODS = 3  # refresh periods an admission counts as credit: the scrape, the refresh, slack


class SignalGauges(Protocol):
    """Where a metric gate exports what it reads (the processor's metrics)."""

    def gate_signal(
        self, labels: Mapping[str, str], *, available: bool, value: float | None, threshold: float
    ) -> None: ...


class _NoGauges:
    def gate_signal(
        self, labels: Mapping[str, str], *, available: bool, value: float | None, threshold: float
    ) -> None:
        return None


def clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def signal_hub(ctx: GateContext) -> SignalHub:
    """The process's hub, or a private one (tests, tools) when the context has none: a gate
    over a private hub closes it with itself (see :attr:`MetricGate.owned_hub`)."""
    hub = ctx.services.get(SIGNALS_SERVICE)
    return hub if isinstance(hub, SignalHub) else SignalHub(ctx.clock)


def prometheus_source(hub: SignalHub, query: str) -> MetricSource:
    """A PromQL source, or the start-up error naming the setting the URL belongs in."""
    if not hub.prometheus.url:
        field = hub.prometheus.url_field
        raise ConfigError("a prometheus-* gate needs a Prometheus URL", field=field)
    return hub.promql(query)


class MetricGate(BudgetGate):
    """A budget gate over one refresher: ``formula(value)`` while it reads, else ``fallback``."""

    def __init__(
        self,
        hub: SignalHub,
        source: MetricSource,
        formula: Callable[[float], float],
        *,
        fallback: float = 0.0,
        threshold: float = 0.0,
        name: str,
        ctx: GateContext,
        pool: str = "",
    ) -> None:
        refresher = self._refresher = hub.refresher(source)
        self._formula = formula
        self.fallback = clamp01(fallback)
        self._threshold = threshold
        self._name = name
        self._labels = {**ctx.labels, "inference_pool": pool}
        gauges = ctx.services.get(GAUGES_SERVICE)
        self._gauges = cast(SignalGauges, gauges) if gauges is not None else _NoGauges()
        self._unsubscribe = refresher.subscribe(ctx.wake)
        self._workers = max(1, ctx.workers)
        self._share = ctx.share
        self._credit_window = CREDIT_PERIODS * refresher.period
        self._recent: dict[int, float] = {}  # admission number -> scaled time, until finished
        self._admitted = 0
        self._marked: Reading | None = None
        self.blind = False
        shared = ctx.services.get(SIGNALS_SERVICE) is hub
        self.owned_hub: SignalHub | None = None if shared else hub

    @property
    def refresher(self) -> Refresher:
        return self._refresher

    async def reading(self) -> Reading:
        return await self._refresher.latest()

    async def budget(self, now: float) -> float:
        reading = await self._refresher.latest()
        value = reading.value
        self._mark(reading)
        if value is None:
            return self.fallback
        budget = self._formula(value)
        budget = clamp01(budget) if math.isfinite(budget) else self.fallback
        live = self._share().live
        return max(0.0, budget - self.credit(now) * live / self._workers)

    def credit(self, now: float) -> int:
        """Unfinished admissions younger than the credit window (see the module docstring)."""
        horizon = now - self._credit_window
        return sum(1 for at in self._recent.values() if at > horizon)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        if await self.budget(now) <= 0:
            return REFUSE
        self._admitted += 1
        number = self._admitted
        self._recent[number] = now

        async def finished() -> None:
            self._recent.pop(number, None)

        holdings.add(finished)
        return CONTINUE

    def _mark(self, reading: Reading) -> None:
        if reading is self._marked:  # already exported and logged (the hot path)
            return
        self._marked = reading
        blind = not reading.available
        self._gauges.gate_signal(
            self._labels, available=not blind, value=reading.value, threshold=self._threshold
        )
        if blind == self.blind:
            return
        self.blind = blind
        if blind:
            log.warning(
                "gate %s %s: signal blind (%s); using fallback value (budget %s)",
                self._name,
                _owner(self._labels),
                reading.why_blind(),
                self.fallback,
            )
        else:
            log.info("gate %s %s: signal back; leaving fallback", self._name, _owner(self._labels))

    async def aclose(self) -> None:
        self._unsubscribe()
        if self.owned_hub is not None:
            await self.owned_hub.aclose()


def _owner(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items() if v)
