"""The asyncio driver of one engine: steps it when a token is due or when work arrives.

The loop sleeps until ``engine.next_due()`` (on the Clock, so a time scale speeds it up) or
until a submit/abort wakes it, steps the engine at the clock's now, and wakes the streams of
the sequences that moved. No polling: an idle engine sleeps until the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from sluiceway.clock import Clock, RealClock
from sluiceway.sim.engine import Engine
from sluiceway.sim.sequence import Admission, Sequence, SimRequest
from sluiceway.sim.stats import EngineStats

__all__ = ["EngineDriver", "TokenStream"]

_log = logging.getLogger(__name__)


class TokenStream:
    """The client side of one request: wait for new tokens, or be called back as they come.

    A ``listener`` is called synchronously inside the engine step (the streaming HTTP path
    writes its events there, saving a task switch per token); otherwise ``next_tokens``
    awaits them. ``delivered`` records TTFT, ITL and E2E at the moment tokens reach the client,
    so an event loop that runs late shows in the histograms as it does to the client, and how
    late the newest token came against its schedule (the simulator's own fidelity).
    """

    __slots__ = ("_clock", "_ended", "_last", "_stats", "_waiter", "listener", "sent", "seq")

    def __init__(self, seq: Sequence, stats: EngineStats, clock: Clock) -> None:
        self.seq = seq
        self.sent = 0
        self.listener: Callable[[], None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._stats = stats
        self._clock = clock
        self._last: float | None = None
        self._ended = False

    def notify(self) -> None:
        if self.listener is not None:
            self.listener()
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_tokens(self) -> list[int]:
        """Tokens produced since the last call (waits for at least one, or the finish)."""
        seq = self.seq
        while len(seq.output) == self.sent and not seq.finished:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None
        tokens = self.take()
        self.delivered(len(tokens))
        return tokens

    def take(self) -> list[int]:
        """Tokens produced since the last call, without waiting."""
        tokens = self.seq.output[self.sent :]
        self.sent = len(self.seq.output)
        return tokens

    def delivered(self, count: int) -> None:
        """``count`` tokens just reached the client (written, or handed to its handler)."""
        stats = self._stats
        if count:
            now = self._clock.monotonic()
            last = self._last
            if last is None:
                stats.ttft.observe(now - self.seq.arrival)
            else:
                stats.itl.observe(now - last)
            if count > 1:  # tokens that arrive together are 0 s apart, as the client sees them
                stats.itl.observe_zeros(count - 1)
            due = self.seq.last_token_at  # the newest token's scheduled time
            if due is not None:
                stats.lateness.observe(max(0.0, now - due))
            self._last = now
        if not self._ended and self.done:
            self._ended = True
            if self.seq.finish_reason != "abort" and self._last is not None:
                stats.e2e.observe(self._last - self.seq.arrival)

    @property
    def done(self) -> bool:
        return self.seq.finished and self.sent == len(self.seq.output)


class EngineDriver:
    """Owns the step loop of one engine on one clock."""

    def __init__(self, engine: Engine, clock: Clock, *, slack: float = 0.0005) -> None:
        self.engine = engine
        self.clock = clock
        # Tokens due within ``slack`` wall seconds are released in this wake-up: timers have
        # about 1 ms granularity, and batching near-simultaneous tokens saves wake-ups.
        self._slack = slack * clock.scale if isinstance(clock, RealClock) else 0.0
        self._streams: dict[str, TokenStream] = {}
        self._wake: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="sim-engine")

    async def stop(self) -> None:
        """Abort every request in flight (their handlers return at once), then stop the loop."""
        now = self.clock.monotonic()
        streams, self._streams = self._streams, {}
        for request_id, stream in streams.items():
            self.engine.abort(request_id, now)
            stream.notify()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def submit(self, request: SimRequest) -> tuple[Admission, TokenStream | None]:
        """Hand a request to the engine; the stream yields its tokens as they are due."""
        outcome = self.engine.submit(request, self.clock.monotonic())
        if outcome is not Admission.ACCEPTED:
            return outcome, None
        seq = self.engine.sequence(request.request_id)
        assert seq is not None  # just accepted
        stream = TokenStream(seq, self.engine.stats, self.clock)
        self._streams[request.request_id] = stream
        self.poke()
        return outcome, stream

    def abort(self, request_id: str) -> None:
        """Cancel a request (client gone): its slot and blocks are free for the next step."""
        self._streams.pop(request_id, None)
        if self.engine.abort(request_id, self.clock.monotonic()):
            self.poke()

    def release(self, request_id: str) -> None:
        """Forget a finished request's stream."""
        self._streams.pop(request_id, None)

    def poke(self) -> None:
        """Wake the step loop (new work, or settings changed)."""
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            for seq in self.engine.step(self.clock.monotonic() + self._slack):
                self._deliver(seq)
            self._wake = loop.create_future()
            due = self.engine.next_due()
            if due is None:
                await self._wake
            else:
                await self._sleep_until(due, self._wake)

    def _deliver(self, seq: Sequence) -> None:
        stream = self._streams.get(seq.request_id)
        if stream is None:
            return
        try:
            stream.notify()
        except Exception:  # one broken listener must not stop every other request
            _log.exception("sim: delivering tokens of %s failed; aborting it", seq.request_id)
            self.abort(seq.request_id)

    async def _sleep_until(self, due: float, wake: asyncio.Future[None]) -> None:
        delay = due - self.clock.monotonic()
        if isinstance(self.clock, RealClock):
            handle = asyncio.get_running_loop().call_later(
                max(0.0, self.clock.to_wall(delay)), _resolve, wake
            )
            try:
                await wake
            finally:
                handle.cancel()
            return
        timer = asyncio.ensure_future(self.clock.sleep(delay))
        timer.add_done_callback(lambda _: _resolve(wake))
        try:
            await wake
        finally:
            timer.cancel()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
