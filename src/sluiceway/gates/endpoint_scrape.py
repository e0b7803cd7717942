"""``endpoint-scrape``: the budget from one metric of a ``/metrics`` page, read directly.

Parameters (upstream's): ``url`` and ``metric`` (required), ``labels`` (a filter), and for a
count such as ``vllm:num_requests_running``: ``max_count_per_pod`` M with the ready-pod count
read from ``pods_url`` (default ``url``) / ``pods_metric`` / ``pods_labels``. With M > 0 the
saturation is value / (pods x M), else the value itself; ``value_type: budget`` reads the value
as the budget instead. The budget is ``max(0, 1 - saturation - baseline)``; ``absent_value``
stands in for a metric the page lacks; ``fallback`` (budget units, default 0) applies while
the page cannot be read.

``admission: counted`` turns the gate into a headroom gate: with capacity C = pods x M, it
admits while max(scraped count, its own admitted-and-unfinished requests) < C, so its own
requests never exceed C however stale the scrape. It takes no ``baseline`` or ``fallback``;
a failed scrape admits nothing.
"""

from __future__ import annotations

from sluiceway.config.gate_params import EndpointScrapeParams
from sluiceway.gates.base import CONTINUE, REFUSE, Decision, Gate, GateRequest, Holdings
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import MetricGate, clamp01, signal_hub
from sluiceway.signals.base import MetricSource, Reading, Sample

__all__ = ["CountedScrapeGate", "EndpointSignal", "build"]


class EndpointSignal:
    """Reads the metric (and the ready pods); answers three samples: the saturation (or the
    raw value when M is 0), the raw value, and the capacity pods x M."""

    def __init__(
        self,
        value: MetricSource,
        pods: MetricSource | None,
        *,
        max_count_per_pod: int,
        absent_value: float | None,
    ) -> None:
        self._value = value
        self._pods = pods
        self._max = max_count_per_pod
        self._absent = absent_value

    @property
    def key(self) -> str:
        pods = self._pods.key if self._pods else "-"
        return f"endpoint [{self._value.key}] pods [{pods}] M={self._max} absent={self._absent}"

    async def _raw(self) -> tuple[float | None, str]:
        reading = await self._value.read()
        if reading.error:
            return None, reading.error
        if reading.value is None:
            return self._absent, reading.why_blind()
        return reading.value, ""

    async def read(self) -> Reading:
        raw, why = await self._raw()
        if raw is None:
            return Reading(error=why)
        pods = 1.0
        if self._pods is not None:
            reading = await self._pods.read()
            if reading.value is None:
                return Reading(error=f"ready pods: {reading.why_blind()}")
            pods = reading.value
        capacity = pods * self._max
        saturation = raw if self._max <= 0 else raw / capacity if capacity > 0 else 1.0
        return Reading((Sample(saturation), Sample(raw), Sample(capacity)))

    async def aclose(self) -> None:
        await self._value.aclose()
        if self._pods is not None:
            await self._pods.aclose()


def scrape_budget(value: float, *, value_type: str, baseline: float) -> float:
    free = clamp01(value) if value_type == "budget" else 1.0 - clamp01(value)
    return max(0.0, free - baseline)


class CountedScrapeGate(MetricGate):
    """Headroom admission: own in-flight and the scraped count both stay under the capacity."""

    in_flight = 0

    def _headroom(self, reading: Reading) -> bool:
        if reading.value is None or len(reading.samples) < 3:
            return False
        raw, capacity = reading.samples[1].value, reading.samples[2].value
        return max(raw, self.in_flight) < capacity

    async def budget(self, now: float) -> float:
        reading = await self.reading()
        self._mark(reading)
        return 1.0 if self._headroom(reading) else 0.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        if await self.budget(now) <= 0:
            return REFUSE
        self.in_flight += 1
        released = False

        async def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.in_flight -= 1

        holdings.add(release)
        return CONTINUE


def build(params: EndpointScrapeParams, ctx: GateContext) -> Gate:
    hub = signal_hub(ctx)
    value = hub.scrape(params.url, params.metric, params.labels)
    pods = None
    if params.pods_metric:
        pods = hub.scrape(params.pods_url or params.url, params.pods_metric, params.pods_labels)
    signal = EndpointSignal(
        value, pods, max_count_per_pod=params.max_count_per_pod, absent_value=params.absent_value
    )
    if params.admission == "counted":
        return CountedScrapeGate(
            hub, signal, clamp01, name="endpoint-scrape", ctx=ctx, threshold=1.0
        )
    return MetricGate(
        hub,
        signal,
        lambda v: scrape_budget(v, value_type=params.value_type, baseline=params.baseline),
        fallback=params.fallback,
        threshold=params.baseline,
        name="endpoint-scrape",
        ctx=ctx,
    )
