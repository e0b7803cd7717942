"""One subscription as the broker sees it: the messages it holds and the puller that fills it.

The puller pulls only when ingest asked for more than is held (a peek that came up short),
at most ``max_unclaimed`` unclaimed messages at a time, and sets their ack deadline to the
hold at once. A held message nobody claims stops being offered shortly before its hold ends;
Pub/Sub then delivers it again (that is how a refusal becomes a nack after a delay, with no
task per message). Claimed messages move to ``claimed`` until the broker ends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from sluiceway.broker.base import Claim, Entry
from sluiceway.broker.pubsub_api import PubSubApi, SubscriptionInfo, api_exceptions
from sluiceway.broker.pubsub_health import RpcHealth
from sluiceway.broker.pubsub_messages import (
    Received,
    message_member,
    message_score,
    retry_count_of,
)
from sluiceway.broker.pubsub_settings import MAX_ACK_DEADLINE, PubSubSettings

__all__ = ["HeldMessage", "SubscriptionFeed", "split_deferred"]

log = logging.getLogger(__name__)

_HOLD_MARGIN = 2.0  # wall seconds: stop offering a held message this long before its hold ends
# (a third of the hold when that is less, so a short hold still leaves time to claim)
_PULL_WAIT = 10.0  # wall seconds a pull may wait server-side (bounds readiness detection too)
_PULL_ERROR_PAUSE = 1.0  # wall seconds before pulling again after a failed pull
_FIRST_PULL_WAIT = 1.0  # wall seconds the first pull of a subscription may wait (start-up)

SetDeadline = Callable[[str, int, str], Awaitable[None]]  # (subscription, seconds, ack id)


def split_deferred(
    deferred: Mapping[str, float], now: float
) -> tuple[list[tuple[str, int]], list[str]]:
    """Backoffs longer than one ack deadline (600 s), at ``now`` (monotonic seconds): the ones
    whose rest now fits get their final deadline ``(ack id, seconds)``; the others are to be
    extended by one more lease."""
    final: list[tuple[str, int]] = []
    extend: list[str] = []
    for ack_id, due in deferred.items():
        remaining = due - now
        if remaining <= MAX_ACK_DEADLINE:
            final.append((ack_id, math.ceil(max(0.0, remaining))))
        else:
            extend.append(ack_id)
    return final, extend


@dataclass(slots=True)
class HeldMessage:
    """A pulled message and the envelope it reads as; ``hold_until`` is ``time.monotonic()``
    after which it is no longer offered."""

    received: Received
    member: str
    score: float
    hold_until: float


@dataclass
class SubscriptionFeed:
    """Held, claimed and long-deferred messages of one subscription, and its puller."""

    queue: str
    path: str
    api: PubSubApi
    settings: PubSubSettings
    set_deadline: SetDeadline
    retries_of: Callable[[str], int]  # message id -> retries this process scheduled
    unclaimed: dict[str, HeldMessage] = field(default_factory=dict)  # member -> message
    claimed: dict[str, tuple[Claim, HeldMessage]] = field(default_factory=dict)  # claim key
    deferred: dict[str, float] = field(default_factory=dict)  # ack id -> due (monotonic)
    health: RpcHealth = field(default_factory=RpcHealth)
    info: SubscriptionInfo | None = None
    unseen: int = 0  # messages held since the last peek
    _wanted: asyncio.Event = field(default_factory=asyncio.Event)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _first_pull: asyncio.Event = field(default_factory=asyncio.Event)

    # -- ingest's view ------------------------------------------------------------------------

    async def peek(self, limit: int, offset: int) -> list[Entry]:
        """Held messages by deadline; asks for more when fewer are held. The first peek waits
        for the first pull, so a processor's first ingest pass sees what was published."""
        if not self._first_pull.is_set():
            self._wanted.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._first_pull.wait(), _FIRST_PULL_WAIT + 1.0)
        self._drop_lapsed()
        held = sorted(self.unclaimed.values(), key=lambda m: (m.score, m.member))
        if len(held) < offset + limit:
            self._wanted.set()
        self.unseen = 0
        return [Entry(self.queue, m.member, m.score) for m in held[offset : offset + limit]]

    async def arrival(self) -> None:
        """Return once the next pulled batch is held."""
        await self._arrived.wait()

    def take(self, entry: Entry, key: str, owner: str, lease_until: float) -> Claim | None:
        """Move a held message to claimed; None when it is gone, lapsed or already claimed."""
        message = self.unclaimed.get(entry.member)
        if message is None or key in self.claimed or message.hold_until <= time.monotonic():
            return None
        del self.unclaimed[entry.member]
        claim = Claim(entry.queue, key, entry.member, entry.score, owner, lease_until)
        self.claimed[key] = (claim, message)
        return claim

    def owned(self, claim: Claim) -> HeldMessage | None:
        held = self.claimed.get(claim.key)
        return None if held is None or held[0].owner != claim.owner else held[1]

    def _drop_lapsed(self) -> None:
        now = time.monotonic()
        for member in [m for m, msg in self.unclaimed.items() if msg.hold_until <= now]:
            del self.unclaimed[member]

    # -- the puller ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Pull whenever more messages are wanted and there is room for them."""
        await self._describe()
        while True:
            await self._wanted.wait()
            room = self.settings.max_unclaimed - len(self.unclaimed)
            if room <= 0:
                self._wanted.clear()
                continue
            wait = _PULL_WAIT if self._first_pull.is_set() else _FIRST_PULL_WAIT
            got = await self._pull(room, wait)
            if got:
                await self._hold(got)
            self._first_pull.set()
            if got is None:
                await asyncio.sleep(_PULL_ERROR_PAUSE)

    async def _describe(self) -> None:
        """Learn the subscription's settings (exactly-once delivery) if start-up did not."""
        if self.info is not None:
            return
        try:
            self.info = await self.api.subscription(self.path)
        except Exception as exc:  # the puller's own RPCs will report it
            log.warning("reading subscription %s failed: %s", self.path, exc)

    async def _pull(self, room: int, wait: float) -> list[Received] | None:
        """One pull; None when it failed (recorded in the health)."""
        try:
            got = await self.api.pull(self.path, room, wait=wait)
        except api_exceptions.DeadlineExceeded:
            got = []  # a long poll that found nothing
        except Exception as exc:
            self.health.failed(time.monotonic(), f"{type(exc).__name__}: {exc}")
            log.warning("pulling %s failed: %s", self.path, exc)
            return None
        self.health.succeeded(time.monotonic())
        return got

    async def _hold(self, got: list[Received]) -> None:
        hold = self.settings.hold_seconds
        try:
            await asyncio.gather(*(self.set_deadline(self.path, hold, m.ack_id) for m in got))
        except Exception as exc:  # their current deadline still applies; offer them anyway
            log.warning("setting the hold of %d messages failed: %s", len(got), exc)
        until = time.monotonic() + hold - min(_HOLD_MARGIN, hold / 3)
        for message in got:
            retries = retry_count_of(message, self.retries_of(message.message_id))
            member = message_member(message, queue=self.queue, retry_count=retries)
            self.unclaimed[member] = HeldMessage(message, member, message_score(member), until)
        self.unseen += len(got)
        self._wanted.clear()
        self._arrived.set()
        self._arrived = asyncio.Event()
