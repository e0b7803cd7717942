"""``aimd``: an in-flight window per pool that learns from the answers to what it admitted.

The saturation gates act on a scraped signal with a threshold; being stale, they open the
whole pool, see it full, close it, see it empty: running requests pulse (8 -> 4 -> 0 -> 8).
This gate holds a window instead (``aimd_window``, the pure part: slow start, additive
increase, a multiplicative cut per flight, a hold for a Retry-After) and moves it on the
router's own answers, fed back by the worker (:class:`~sluiceway.gates.base.Feedback`), and
optionally on a signal: the pool's saturation (``saturation_target``, the queries of
``prometheus-saturation``) or the router's mean queue duration (``queue_duration_target``).

- Apply: admits while in flight < window; otherwise ``overflow`` requests are refused (back to
  the broker: sheddable backlog never holds a worker) and all others wait (the worker parks
  until a request ends). Each admission holds one slot, released when its request ends.
- Budget: always 1; the window decides per request, so overflow can be refused, not parked.
- One window per pool id, shared by every ``aimd`` gate of this processor that names it (the
  first gate's settings win; a later one with others is logged); each ``Processor`` keeps its
  own (``WINDOWS_SERVICE``), so two in one process are two members with a window each. One
  window for all lanes: upstream's per-lane windows are not done.
- Several processors on one pool: each window's ceiling is its processor's part of
  ``max_window`` (split by live membership, ``pool_share``), read at each admission.
- Only a pool gate hears answers; as a queue gate it counts and follows the signal alone.
- Gauges per gate: window, ssthresh and in flight (``GAUGES_SERVICE``'s ``gate_window``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from sluiceway.config.gate_params import AimdParams
from sluiceway.gates.aimd_window import (
    AimdWindow,
    WindowSettings,
    answer_kind,
    holding_retry_after,
)
from sluiceway.gates.base import (
    CONTINUE,
    REFUSE,
    WAIT,
    AnswerFacts,
    Decision,
    Gate,
    GateRequest,
    Holdings,
)
from sluiceway.gates.context import GAUGES_SERVICE, SIGNALS_SERVICE, GateContext
from sluiceway.gates.metric import prometheus_source, signal_hub
from sluiceway.gates.pool_queries import matchers, saturation_queries
from sluiceway.gates.pool_share import SOLE, PoolShare
from sluiceway.observability.names import ROUTER_DEPRECATED_PREFIX, ROUTER_PREFIX
from sluiceway.signals.base import Reading
from sluiceway.signals.cascade import CascadeSource
from sluiceway.signals.refresher import Refresher, SignalHub
from sluiceway.wire.lanes import OVERFLOW

__all__ = [
    "PROCESS_WINDOWS",
    "WINDOWS_SERVICE",
    "AimdGate",
    "SharedWindows",
    "Signal",
    "WindowGauges",
    "build",
    "queue_duration_queries",
    "window_settings",
]

log = logging.getLogger(__name__)

# The ``GateContext.services`` key of a private :class:`SharedWindows` (tests, tools); without
# one, gates share the process's.
WINDOWS_SERVICE = "aimd_windows"
_QUEUE_DURATION = "flow_control_request_queue_duration_seconds"
_RATE_WINDOW = "1m"


class SharedWindows:
    """The windows of one process by pool id; a window lives while a gate uses it, so a
    stopped processor leaves none behind for the next."""

    def __init__(self) -> None:
        self._windows: dict[str, AimdWindow] = {}
        self._users: Counter[str] = Counter()

    def __contains__(self, pool_id: object) -> bool:
        return pool_id in self._windows

    def take(self, pool_id: str, settings: WindowSettings) -> AimdWindow:
        """The pool's window, made with ``settings`` by its first user."""
        window = self._windows.get(pool_id)
        if window is None:
            window = self._windows[pool_id] = AimdWindow(settings)
        elif window.settings != settings:
            log.warning(
                "aimd pool %s: settings %s differ from the shared window's %s; using the latter",
                pool_id,
                settings,
                window.settings,
            )
        self._users[pool_id] += 1
        return window

    def give_back(self, pool_id: str) -> None:
        self._users[pool_id] -= 1
        if self._users[pool_id] <= 0:
            del self._users[pool_id]
            self._windows.pop(pool_id, None)


PROCESS_WINDOWS = SharedWindows()


@runtime_checkable
class WindowGauges(Protocol):
    """Where a window is exported (the processor's metrics): read at scrape time."""

    def gate_window(
        self,
        labels: Mapping[str, str],
        *,
        window: Callable[[], float],
        ssthresh: Callable[[], float],
        in_flight: Callable[[], float],
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Signal:
    """A shared refresher and how far a value lies above its target (> 0: above)."""

    refresher: Refresher
    error: Callable[[float], float]


def queue_duration_queries(pool: str, namespace: str) -> list[str]:
    """The router's mean flow-control queue duration over the last minute, under its current
    prefix, then its deprecated one."""
    labels = matchers(inference_pool=pool, namespace=namespace)
    out = []
    for prefix in (ROUTER_PREFIX, ROUTER_DEPRECATED_PREFIX):
        metric = prefix + _QUEUE_DURATION
        total = f"sum(rate({metric}_sum{labels}[{_RATE_WINDOW}]))"
        count = f"sum(rate({metric}_count{labels}[{_RATE_WINDOW}]))"
        out.append(f"{total} / {count}")
    return out


class AimdGate:
    """Admits through its pool's window; learns from answers (:meth:`observe`) and the signal."""

    def __init__(
        self,
        window: AimdWindow,
        *,
        signal: Signal | None = None,
        wake: Callable[[], None] = lambda: None,
        on_close: Callable[[], None] = lambda: None,
        share: Callable[[], PoolShare] = lambda: SOLE,
    ) -> None:
        self.window = window
        self._share = share
        self._signal = signal
        self._wake = wake
        self._on_close = on_close
        self._numbers: dict[str, int] = {}  # holder -> dispatch number, until released
        self._seen: Reading | None = None
        self._unsubscribe = signal.refresher.subscribe(wake) if signal else lambda: None
        self.owned_hub: SignalHub | None = None
        self._closed = False

    async def budget(self, now: float) -> float:
        await self._follow_signal()
        return 1.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        await self._follow_signal()
        window = self.window
        window.cap(self._share().split(window.settings.max_window))
        number = window.take(now)
        if number is None:
            return REFUSE if request.classification == OVERFLOW else WAIT
        holder = request.holder
        self._numbers[holder] = number
        released = False

        async def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._numbers.pop(holder, None)
                self.window.finished()
                self._wake()  # a slot is free, whichever pool shares the window

        holdings.add(release)
        return CONTINUE

    def observe(self, answer: AnswerFacts, now: float) -> None:
        number = self._numbers.get(answer.holder)
        if number is None:  # not admitted here (another gate on the pool, a queue gate)
            return
        kind = answer_kind(answer.status, answer.reason)
        self.window.answer(
            kind, number, now, holding_retry_after(answer.reason, answer.retry_after)
        )

    async def _follow_signal(self) -> None:
        """Hand each fresh reading to the window once (a blind one counts as not above)."""
        if self._signal is None:
            return
        reading = await self._signal.refresher.latest()
        if reading is self._seen:
            return
        self._seen = reading
        value = reading.value
        self.window.signal(value is not None and self._signal.error(value) > 0)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self._on_close()
        if self.owned_hub is not None:
            await self.owned_hub.aclose()


def window_settings(params: AimdParams, workers: int) -> WindowSettings:
    """The window's settings: ``max_window`` 0 is the pool's worker count (at least
    ``min_window``)."""
    top = params.max_window or max(params.min_window, workers)
    return WindowSettings(
        min_window=params.min_window,
        max_window=top,
        increase=params.increase,
        decrease=params.decrease,
        hold_duration=params.hold_duration,
    )


def _signal(params: AimdParams, hub: SignalHub) -> Signal | None:
    """The configured target's signal (None without a target)."""
    pool, namespace = params.pool, params.namespace
    if params.saturation_target is not None:
        most = params.saturation_target
        queries = saturation_queries(pool, namespace)  # they read 1 - saturation
        return _read(hub, queries, f"saturation {pool}", lambda free: (1.0 - free) - most)
    if params.queue_duration_target is not None:
        longest = params.queue_duration_target
        queries = queue_duration_queries(pool, namespace)
        return _read(hub, queries, f"queue duration {pool}", lambda seconds: seconds - longest)
    return None


def _read(hub: SignalHub, queries: list[str], name: str, error: Callable[[float], float]) -> Signal:
    source = CascadeSource([prometheus_source(hub, q) for q in queries], name=name)
    return Signal(hub.refresher(source), error)


def build(params: AimdParams, ctx: GateContext) -> Gate:
    pool_id = params.pool or ctx.labels.get("pool_name", "")
    windows = ctx.services.get(WINDOWS_SERVICE)
    shared = windows if isinstance(windows, SharedWindows) else PROCESS_WINDOWS
    targeted = params.saturation_target or params.queue_duration_target
    hub = signal_hub(ctx) if targeted else None
    signal = None if hub is None else _signal(params, hub)
    window = shared.take(pool_id, window_settings(params, ctx.workers))
    gate = AimdGate(
        window,
        signal=signal,
        wake=ctx.wake,
        on_close=lambda: shared.give_back(pool_id),
        share=ctx.share,
    )
    if hub is not None and ctx.services.get(SIGNALS_SERVICE) is not hub:
        gate.owned_hub = hub
    gauges = ctx.services.get(GAUGES_SERVICE)
    if isinstance(gauges, WindowGauges):
        gauges.gate_window(
            {**ctx.labels, "inference_pool": pool_id},
            window=lambda: window.window,
            ssthresh=lambda: window.ssthresh,
            in_flight=lambda: window.in_flight,
        )
    return gate
