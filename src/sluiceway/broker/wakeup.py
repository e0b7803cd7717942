"""Wake-ups on arrivals: Redis keyspace notifications when allowed, else polling
(docs/design-rules.md rule 12).

At start the broker reads ``notify-keyspace-events``. When the flags publish sorted-set events
(``z`` or ``A``) on keyspace (``K``) or keyevent (``E``) channels, a waiter wakes on the ZADD
that put an entry into one of its queues; otherwise (flags off, ``CONFIG`` forbidden as on many
managed services, cluster mode) it sleeps the poll interval. The mode is exported and logged
once by the owner of the :class:`Waker`.

Events are a speed-up, never a correctness requirement: a waiter always returns after its
timeout, and a missed or spurious wake-up only costs one empty peek.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from enum import Enum
from typing import Any, Final

__all__ = [
    "RESUBSCRIBE_BACKOFF",
    "EventWaker",
    "PollWaker",
    "WakeMode",
    "Waker",
    "mode_for_flags",
    "subscription_for",
]

_log = logging.getLogger(__name__)

# Wall seconds between resubscription attempts of a lost listener: first, at most.
RESUBSCRIBE_BACKOFF: Final = (0.1, 2.0)

# Redis events that put an entry into a sorted set.
_ARRIVAL_EVENTS = frozenset({"zadd", "zincr", "zunionstore", "zinterstore", "zdiffstore"})


class WakeMode(Enum):
    """How the broker learns about arrivals."""

    EVENTS = "events"
    POLLING = "polling"


def mode_for_flags(flags: str) -> WakeMode:
    """EVENTS when ``notify-keyspace-events`` flags publish sorted-set events, else POLLING."""
    has_class = "z" in flags or "A" in flags
    has_channel = "K" in flags or "E" in flags
    return WakeMode.EVENTS if has_class and has_channel else WakeMode.POLLING


def subscription_for(flags: str, db: int, keys: Iterable[str]) -> list[str]:
    """Channels to subscribe: one keyspace channel per key (``K``) or the zadd keyevent (``E``)."""
    if "K" in flags:
        return [f"__keyspace@{db}__:{key}" for key in keys]
    return [f"__keyevent@{db}__:zadd"]


class Waker:
    """Common face of the two modes: ``wait(keys, timeout)`` returns True when woken."""

    mode: WakeMode

    async def wait(self, keys: Sequence[str], timeout: float) -> bool:  # noqa: ASYNC109
        raise NotImplementedError

    def notify(self, key: str) -> None:
        """A local arrival (this process wrote ``key``); wakes local waiters at once."""

    async def aclose(self) -> None:
        """Stop listening."""


class PollWaker(Waker):
    """Sleeps the timeout; local arrivals still wake local waiters early.

    Waiters are indexed by key, so a notify costs the waiters of that key only (a coordinator
    holds thousands of waiters, each on its own result list).
    """

    mode = WakeMode.POLLING

    def __init__(self) -> None:
        self._by_key: dict[str, set[asyncio.Future[bool]]] = {}
        self._keys_of: dict[asyncio.Future[bool], frozenset[str]] = {}

    async def wait(self, keys: Sequence[str], timeout: float) -> bool:  # noqa: ASYNC109
        fut = self.arm(keys)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return False
        finally:
            self.disarm(fut)

    def arm(self, keys: Sequence[str]) -> asyncio.Future[bool]:
        """Register a waiter now (before a check that must not miss a wake-up); await the
        future, then :meth:`disarm` it."""
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        watched = frozenset(keys)
        self._keys_of[fut] = watched
        for key in watched:
            self._by_key.setdefault(key, set()).add(fut)
        return fut

    def disarm(self, fut: asyncio.Future[bool]) -> None:
        for key in self._keys_of.pop(fut, ()):
            waiters = self._by_key.get(key)
            if waiters is not None:
                waiters.discard(fut)
                if not waiters:
                    del self._by_key[key]

    async def wait_unless(
        self,
        key: str,
        present: Callable[[], Awaitable[bool]],
        timeout: float,  # noqa: ASYNC109
    ) -> bool:
        """True at once when ``present()`` (checked after the wait is armed, so a notify
        between the check and the wait is not lost), else :meth:`wait` on ``key``."""
        fut = self.arm([key])
        try:
            if await present():
                return True
            return await asyncio.wait_for(fut, max(0.0, timeout))
        except TimeoutError:
            return False
        finally:
            self.disarm(fut)

    def waiting(self) -> int:
        """How many waits are registered right now."""
        return len(self._keys_of)

    def notify(self, key: str) -> None:
        for fut in list(self._by_key.get(key, ())):
            if not fut.done():
                fut.set_result(True)


class EventWaker(PollWaker):
    """Listens to keyspace notifications on one dedicated Pub/Sub connection.

    ``pubsub`` is a redis-py asyncio ``PubSub``; channels are added as new queues are waited on.
    If the connection breaks (a Redis restart), waiters fall back to their timeouts while the
    listener resubscribes with backoff; one line says it was lost, one that it is back.
    """

    def __init__(self, pubsub: Any, *, flags: str, db: int) -> None:
        super().__init__()
        # Queue arrivals need sorted-set events; other keys (result lists, cancel markers) may
        # still publish, so a listener exists whenever any keyspace channel does.
        self.mode = mode_for_flags(flags)
        self._pubsub = pubsub
        self._flags = flags
        self._db = db
        self._channels: set[str] = set()
        self._keys: set[str] = set()
        self._patterns: dict[str, Callable[[str], None]] = {}
        self._subscribed_patterns: set[str] = set()
        self._on_live: list[Callable[[bool], None]] = []
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def allows_key_events(self, classes: str) -> bool:
        """Whether the flags publish keyspace events of one of ``classes`` (e.g. ``"$A"``)."""
        return "K" in self._flags and any(c in self._flags for c in classes)

    async def watch_prefix(
        self, prefix: str, on_event: Callable[[str], None], on_live: Callable[[bool], None]
    ) -> None:
        """Call ``on_event(key)`` for every keyspace event on keys starting with ``prefix``.

        ``on_live(True)`` once Redis confirmed the subscription, ``on_live(False)`` when the
        listener stops (events may have been missed from then on).
        """
        pattern = f"__keyspace@{self._db}__:{prefix}*"
        async with self._lock:
            if pattern in self._patterns:
                return
            self._on_live.append(on_live)
            self._patterns[pattern] = on_event
            await self._resubscribe_patterns()
            self._ensure_reader()

    async def _resubscribe_patterns(self) -> None:
        """(Re)subscribe wanted patterns, e.g. after the listener lost its connection."""
        missing = sorted(set(self._patterns) - self._subscribed_patterns)
        if missing:
            await self._pubsub.psubscribe(*missing)
            self._subscribed_patterns.update(missing)

    def _ensure_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._listen(), name="keyspace-listener")

    async def watch(self, keys: Iterable[str]) -> None:
        """Subscribe to arrivals on ``keys`` (idempotent); starts the listener if needed."""
        async with self._lock:
            self._keys.update(keys)
            await self._subscribe_missing()
            self._ensure_reader()

    async def _subscribe_missing(self) -> None:
        """(Re)subscribe every wanted channel and pattern not subscribed (lock held)."""
        wanted = set(subscription_for(self._flags, self._db, self._keys)) if self._keys else set()
        new = sorted(wanted - self._channels)
        if new:
            await self._pubsub.subscribe(*new)
            self._channels.update(new)
        await self._resubscribe_patterns()

    async def wait(self, keys: Sequence[str], timeout: float) -> bool:  # noqa: ASYNC109
        try:
            await self.watch(keys)
        except Exception as exc:  # a broken subscription must not stop the consumer
            _log.warning("keyspace subscription failed, polling this round: %s", exc)
        return await super().wait(keys, timeout)

    async def _listen(self) -> None:
        """Read events; a lost connection (a Redis restart) is told once, and the listener
        resubscribes everything with a growing backoff until Redis is back (issue 26):
        without it, wake-ups would fall back to the backstop poll for good."""
        lost_at: float | None = None
        while self._reader is not None:
            try:
                if lost_at is not None:
                    async with self._lock:
                        await self._subscribe_missing()
                    _log.info("keyspace listener back after %.1f s", _now() - lost_at)
                    lost_at = None
                await self._read()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if lost_at is None:
                    # INFO: the outage itself is reported once by whoever uses the broker
                    _log.info("keyspace listener lost: %s; resubscribing with backoff", exc)
                    lost_at, delay = _now(), RESUBSCRIBE_BACKOFF[0]
                else:
                    delay = min(delay * 2, RESUBSCRIBE_BACKOFF[1])
                self._channels.clear()
                self._subscribed_patterns.clear()
                self._set_live(False)
                await asyncio.sleep(delay)

    async def _read(self) -> None:
        while self._reader is not None:
            msg = await self._pubsub.get_message(timeout=None)
            if msg is not None:
                self._dispatch(msg)

    def _set_live(self, live: bool) -> None:
        for on_live in self._on_live:
            on_live(live)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = _text(msg.get("type"))
        if kind == "psubscribe":
            self._set_live(True)
        elif kind == "pmessage":
            on_event = self._patterns.get(_text(msg.get("pattern")))
            if on_event is not None:
                on_event(_text(msg.get("channel")).split(":", 1)[1])
        elif kind == "message":
            self._on_message(msg)

    def _on_message(self, msg: dict[str, Any]) -> None:
        channel = _text(msg.get("channel"))
        data = _text(msg.get("data"))
        if channel.startswith("__keyspace@"):
            key, event = channel.split(":", 1)[1], data
        else:
            key, event = data, channel.rsplit(":", 1)[1]
        if event in _ARRIVAL_EVENTS:
            self.notify(key)

    async def aclose(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            # A cancel landing inside redis-py's read can be absorbed there; closing the
            # connection below ends the read in any case, so never wait unboundedly here.
            await asyncio.wait({reader}, timeout=1.0)
        with contextlib.suppress(Exception):
            await self._pubsub.aclose()
        # redis-py closes the socket without waiting; let the transport finish closing while
        # the loop still runs (a resubscribed connection otherwise dies in the collector).
        for _ in range(3):
            await asyncio.sleep(0)
        if reader is not None and not reader.done():
            await asyncio.wait({reader}, timeout=1.0)
            reader.cancel()


def _now() -> float:
    return time.monotonic()


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)
