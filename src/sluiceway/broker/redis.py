"""The ``redis-sortedset`` broker: the upstream keys and formats with durable claims.

Every state change is one Lua script from :mod:`sluiceway.broker.lua` over the keys of
:mod:`sluiceway.broker.keys`, with ``now`` and lease instants from the caller (scripts never
read Redis ``TIME``, so the one scaled clock rules). Delivery: on standalone Redis an entry is
pending, claimed, parked for retry or answered, never two at once, and an ack pushes the result
and drops the claim in one script fenced by the owner token. In cluster mode a result list in
another slot is written renew-then-push-then-drop (at-least-once; results carry
``request_token``).

Connection: a ``redis://`` / ``rediss://`` URL (AUTH as ``user:password@``, TLS by scheme, DB as
the path), ``mode`` standalone | cluster | sentinel (``addrs``, ``master_name``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, cast

from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from sluiceway.broker import lua, redis_inspect
from sluiceway.broker.base import (
    ActiveMarker,
    Broker,
    BrokerOptions,
    Claim,
    ClaimAsk,
    ClaimOutcome,
    Entry,
    RenewOutcome,
    ResultWrite,
    retry_origin,
)
from sluiceway.broker.cancel_cache import CancelCache
from sluiceway.broker.inspect import QueueCounts
from sluiceway.broker.keys import (
    DEFAULT_RETRY_QUEUE,
    MAILBOX_PREFIX,
    Keyspace,
    QueueKeys,
    invalid_info,
    member_digest,
)
from sluiceway.broker.leases import LeaseHooks
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.broker.redis_batch import ScriptBatcher
from sluiceway.broker.redis_connect import (
    DEFAULT_MAX_CONNECTIONS,
    AnyRedis,
    connect_redis,
    failure_text,
    make_waker,
)
from sluiceway.broker.redis_failover import FailoverWatch, watch_failovers
from sluiceway.broker.redis_probe import PROBE_PREFIX, check_permissions
from sluiceway.broker.wakeup import EventWaker, PollWaker, WakeMode, Waker
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.observability.logging import outage_log

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "FENCED_RETRY_DELAYS",
    "RedisBroker",
    "connect_redis",
    "open_redis_broker",
]

_log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")
_Rows = list[tuple[str, float]]
_RENEW_STATUS = {1: RenewOutcome.RENEWED, 0: RenewOutcome.MISSING, -1: RenewOutcome.STOLEN}
# Wall seconds between attempts of a fenced write (ack, retry, release) while Redis cannot be
# reached: about 15 s in all, enough for a restart, well inside a claim's lease.
FENCED_RETRY_DELAYS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0)


def _io(fn: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Turn redis-py errors into :class:`BrokerError` naming the operation.

    A connection error is tried once more on a fresh connection first: after a Redis restart
    or a failover every pooled connection is stale, and each would otherwise fail one caller
    (a coordinator's held waits answered 503). The server never ran a command sent on a
    connection it had closed; ``pop_result``, whose repeat could drop a record, is not tried
    again (:func:`_io_once`).
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except RedisConnectionError:
            await cast(RedisBroker, args[0])._drop_idle_connections()
        except RedisError as exc:
            raise BrokerError(f"redis {fn.__name__} failed: {exc}") from exc
        try:
            return await fn(*args, **kwargs)
        except RedisError as exc:
            raise BrokerError(f"redis {fn.__name__} failed: {exc}") from exc

    return wrapper


def _io_once(fn: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """:func:`_io` without the second try, for a command whose repeat is not harmless."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except RedisError as exc:
            raise BrokerError(f"redis {fn.__name__} failed: {exc}") from exc

    return wrapper


def _ms(wall_seconds: float | None) -> int:
    """A wall-second TTL as whole milliseconds (at least 1); 0 means none."""
    if not wall_seconds or wall_seconds <= 0:
        return 0
    return max(1, round(wall_seconds * 1000))


class RedisBroker:
    """A :class:`~sluiceway.broker.base.Broker` over Redis sorted sets, lists and Lua."""

    # Fault hook for crash tests (None in the shipped package; tests install one): awaited
    # before every ack ("ack:before": the HTTP answer is in, nothing is written) and between
    # the steps of a cross-slot ack ("ack:pushed"); raising or dying there leaves Redis as a
    # crash at that point would.
    fault_hook: Callable[[str], Awaitable[None]] | None = None

    def __init__(
        self,
        client: AnyRedis,
        *,
        keyspace: Keyspace,
        waker: Waker,
        failover: FailoverWatch | None = None,
    ) -> None:
        self._client = client
        self._failover = failover
        self._keys = keyspace
        self._waker = waker
        self._queues: dict[str, QueueKeys] = {}
        self._lease_hooks = LeaseHooks()
        self._cancels = CancelCache()
        self._results_ready = PollWaker()  # woken by keyspace events on result lists
        self._scripts: dict[str, AsyncScript] = {
            name: client.register_script(lua.source(name)) for name in lua.SCRIPT_NAMES
        }
        # Acks of one loop turn share a pipeline (standalone only: a cluster client routes
        # each script by slot).
        self._batcher = None if keyspace.cluster else ScriptBatcher(client)

    @property
    def wake_mode(self) -> WakeMode:
        """Whether arrivals wake consumers by keyspace events or by polling (read once at
        start, from the server's ``notify-keyspace-events``)."""
        return self._waker.mode

    def add_lease_hook(self, hook: Callable[[float], Awaitable[object]]) -> None:
        """Run ``hook(now)`` after reclaim rounds: other lease holders (quota) expire too."""
        self._lease_hooks.add(hook)

    @property
    def cancel_checks_cached(self) -> bool:
        """Whether cancellation checks are answered from keyspace events right now."""
        return self._cancels.live

    @property
    def client(self) -> AnyRedis:
        """The underlying client (shared with Redis quota stores on the same server)."""
        return self._client

    @property
    def keyspace(self) -> Keyspace:
        return self._keys

    def _q(self, queue: str) -> QueueKeys:
        keys = self._queues.get(queue)
        if keys is None:
            keys = self._queues[queue] = self._keys.queue(queue)
        return keys

    async def _run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        return await self._scripts[name](keys=list(keys), args=list(args))

    async def _run_batched(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Like :meth:`_run`, sharing a pipeline with the other calls of this loop turn."""
        if self._batcher is None:
            return await self._run(name, keys, args)
        return await self._batcher.run(self._scripts[name], keys, args)

    # -- consumer side: entries -----------------------------------------------------------

    @_io
    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        rows = await self._client.zrange(
            self._q(queue).pending, *order.span("-inf", "+inf"), desc=order.reverse,
            byscore=True, offset=offset, num=limit, withscores=True,
        )  # fmt: skip
        return [Entry(queue, str(member), float(score)) for member, score in cast(_Rows, rows)]

    @_io
    async def claim(
        self, entry: Entry, *, key: str, owner: str, lease_until: float
    ) -> Claim | None:
        q = self._q(entry.queue)
        won = await self._run(
            "claim", (q.pending, *q.claim_keys), (entry.member, key, owner, lease_until)
        )
        if int(won) != 1:
            return None
        return Claim(entry.queue, key, entry.member, entry.score, owner, lease_until)

    @_io
    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        """One script call per queue in the batch (a processor's batch has one queue)."""
        by_queue: dict[str, list[int]] = {}
        for i, ask in enumerate(asks):
            by_queue.setdefault(ask.entry.queue, []).append(i)
        out: list[ClaimOutcome] = [ClaimOutcome(None)] * len(asks)
        for queue, indices in by_queue.items():
            outcomes = await self._claim_batch(queue, [asks[i] for i in indices])
            for i, outcome in zip(indices, outcomes, strict=True):
                out[i] = outcome
        return out

    async def _claim_batch(self, queue: str, asks: list[ClaimAsk]) -> list[ClaimOutcome]:
        q = self._q(queue)
        cancels = [self._keys.request_cancel(a.request_id) for a in asks]
        checked = self._keys.same_slot(q.pending, *cancels)
        args: list[Any] = []
        for a in asks:
            args += (a.entry.member, a.key, a.owner, a.lease_until, a.request_token)
        since = self._cancels.mark()
        keys = (q.pending, *q.claim_keys, *(cancels if checked else ()))
        codes = await self._run("claim_many", keys, args)
        out = []
        for ask, code in zip(asks, codes, strict=True):
            if int(code) <= 0:
                out.append(ClaimOutcome(None))
                continue
            e = ask.entry
            claim = Claim(queue, ask.key, e.member, e.score, ask.owner, ask.lease_until)
            if checked:
                cancelled = int(code) == 2
                if not cancelled:
                    self._cancels.remember_clear(ask.request_id, ask.request_token, since=since)
            else:
                cancelled = await self.is_cancelled(ask.request_id, ask.request_token)
            out.append(ClaimOutcome(claim, cancelled))
        return out

    @_io
    async def renew(self, claim: Claim, *, lease_until: float) -> RenewOutcome:
        q = self._q(claim.queue)
        out = await self._run(
            "renew", (q.owners, q.claims_idx), (lease_until, claim.key, claim.owner)
        )
        return _RENEW_STATUS[int(out[0])]

    @_io
    async def claim_owners(self, queue: str) -> list[str]:
        """The owner tokens of the claims held on ``queue`` (start-up checks)."""
        return [str(owner) for owner in await self._client.hvals(self._q(queue).owners)]

    @_io
    async def renew_many(self, renewals: Sequence[tuple[Claim, float]]) -> list[RenewOutcome]:
        """Renew many claims (``(claim, lease_until)`` pairs) in one round trip on standalone
        Redis: one renew script call per queue and lease instant, all in one pipeline."""
        groups: dict[tuple[str, float], list[int]] = {}
        for i, (claim, lease_until) in enumerate(renewals):
            groups.setdefault((claim.queue, lease_until), []).append(i)
        calls = [
            self._renew_group(renewals, queue, lease, at) for (queue, lease), at in groups.items()
        ]
        out: list[RenewOutcome] = [RenewOutcome.MISSING] * len(renewals)
        for at, codes in zip(groups.values(), await asyncio.gather(*calls), strict=True):
            for i, code in zip(at, codes, strict=True):
                out[i] = _RENEW_STATUS[int(code)]
        return out

    async def _renew_group(
        self, renewals: Sequence[tuple[Claim, float]], queue: str, lease: float, at: list[int]
    ) -> list[Any]:
        q = self._q(queue)
        args: list[Any] = [lease]
        for i in at:
            args += (renewals[i][0].key, renewals[i][0].owner)
        return list(await self._run_batched("renew", (q.owners, q.claims_idx), args))

    @_io
    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        if self.fault_hook is not None:
            await self.fault_hook("ack:before")
        self._cancels.forget(result.request_id)
        return await self._fenced("ack", lambda: self._ack_once(claim, result))

    async def _fenced(self, what: str, call: Callable[[], Awaitable[R]]) -> R:
        """Run a fenced write, again on fresh connections while Redis is unreachable.

        After a Redis restart every pooled connection is stale; giving up would let the lease
        lapse and the request run a second time. The write is fenced by the owner token, so
        running it again is safe: a repeat of a write that did land is refused by the fence.
        """
        for delay in (*FENCED_RETRY_DELAYS, None):
            try:
                return await call()
            except (RedisConnectionError, RedisTimeoutError) as exc:
                if delay is None:
                    raise
                # one "broker lost" line for the whole outage, shared with the processor's ingest
                outage = outage_log(self, "broker", _log)
                outage.failed(exc, f"{what}, retried on a fresh connection")
                await self._drop_idle_connections()
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _drop_idle_connections(self) -> None:
        pool = getattr(self._client, "connection_pool", None)
        if pool is not None:
            await pool.disconnect(inuse_connections=False)

    async def _ack_once(self, claim: Claim, result: ResultWrite) -> bool:
        q = self._q(claim.queue)
        active = self._keys.request_active(result.request_id)
        cancel = self._keys.request_cancel(result.request_id)
        args = (
            claim.key,
            claim.owner,
            result.record,
            _ms(result.expire_after),
            result.request_token,
        )
        if self._keys.same_slot(q.claimed, result.destination, active, cancel):
            keys = (*q.claim_keys, result.destination, active, cancel)
            return int(await self._run_batched("ack", keys, args)) == 1
        if self._keys.same_slot(q.claimed, result.destination):
            pushed = int(await self._run("ack", (*q.claim_keys, result.destination), args)) == 1
        else:
            pushed = await self._ack_across_slots(claim, q, result)
        if pushed:
            await self._clear_markers(result.request_id, result.request_token)
        return pushed

    async def _ack_across_slots(self, claim: Claim, q: QueueKeys, result: ResultWrite) -> bool:
        """Cluster, result list in another slot: fence by renewing, push, then drop the claim.

        A crash between the push and the drop redelivers the entry: at-least-once.
        """
        if await self.renew(claim, lease_until=claim.lease_until) is not RenewOutcome.RENEWED:
            return False
        await self._client.lpush(result.destination, result.record)
        if ttl := _ms(result.expire_after):
            await self._client.pexpire(result.destination, ttl)
        if self.fault_hook is not None:
            await self.fault_hook("ack:pushed")
        await self._run("drop_claim", q.claim_keys, (claim.key, claim.owner))
        return True

    async def _clear_markers(self, request_id: str, token: str) -> None:
        for key in (self._keys.request_active(request_id), self._keys.request_cancel(request_id)):
            await self._run("clear_markers", (key,), (token,))

    @_io
    async def release(self, claim: Claim) -> bool:
        q = self._q(claim.queue)
        keys = (q.pending, *q.claim_keys)
        args = (claim.key, claim.owner, claim.score)
        done = int(await self._fenced("release", lambda: self._run("release", keys, args))) == 1
        if done:
            self._waker.notify(q.pending)
        return done

    @_io
    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        q = self._q(claim.queue)
        keys = (*q.claim_keys, q.retry)
        args = (claim.key, claim.owner, member, due)
        return int(await self._fenced("retry", lambda: self._run("retry", keys, args))) == 1

    def _retry_sets(self, *extra_queues: str) -> list[str]:
        """The retry set, or in cluster mode the per-queue sets of every queue seen here."""
        if not self._keys.cluster:
            return [self._keys.retry_queue_name]
        queues = {*self._queues, *extra_queues}
        return sorted({self._q(name).retry for name in queues})

    @_io
    async def move_due_retries(self, now: float, limit: int, *, fallback_queue: str) -> int:
        moved = 0
        for retry_key in self._retry_sets(fallback_queue):
            due = await self._client.zrange(
                retry_key, "-inf", now, byscore=True, offset=0, num=limit - moved
            )
            moves = [self._move_one(retry_key, str(m), now, fallback_queue) for m in due]
            moved += sum(await asyncio.gather(*moves))
            if moved >= limit:
                break
        return moved

    async def _move_one(self, retry_key: str, member: str, now: float, fallback: str) -> int:
        origin = retry_origin(member)
        queue, score = origin if origin is not None else (fallback, now)
        pending = self._q(queue).pending
        if self._keys.same_slot(retry_key, pending):
            moved = int(await self._run_batched("move_due", (retry_key, pending), (member, score)))
        else:
            moved = await self._move_across_slots(retry_key, pending, member, score)
        if moved:
            self._waker.notify(pending)
        return moved

    async def _move_across_slots(
        self, retry_key: str, pending: str, member: str, score: float
    ) -> int:
        """Cluster, origin queue in another slot: ZADD first (idempotent), then ZREM (the
        winner counts). A crash in between moves the entry again later: at-least-once."""
        await self._client.zadd(pending, {member: score})
        return int(await self._client.zrem(retry_key, member))

    @_io
    async def next_retry_due(self) -> float | None:
        best: float | None = None
        for retry_key in self._retry_sets():
            head = await self._client.zrange(retry_key, 0, 0, withscores=True)
            if head and (best is None or float(head[0][1]) < best):
                best = float(head[0][1])
        return best

    @_io
    async def reclaim_expired(self, queue: str, now: float, limit: int) -> int:
        q = self._q(queue)
        count = int(await self._run("reclaim", (q.pending, *q.claim_keys), (now, limit)))
        if count:
            self._waker.notify(q.pending)
        await self._lease_hooks.run(now)
        return count

    @_io
    async def quarantine(self, entry: Entry, *, reason: str = "", now: float = 0.0) -> bool:
        q = self._q(entry.queue)
        keys = (q.pending, q.invalid, q.invalid_info)
        args = (entry.member, member_digest(entry.member), invalid_info(reason, now))
        return int(await self._run("quarantine", keys, args)) == 1

    @_io
    async def backlog(self, queue: str) -> int:
        return int(await self._client.zcard(self._q(queue).pending))

    @_io
    async def count_due(self, queue: str, limits: Sequence[float]) -> list[int]:
        pending = self._q(queue).pending
        pipe = self._client.pipeline(transaction=False)
        for limit in limits:
            pipe.zcount(pending, "-inf", limit)
        return [int(n) for n in await pipe.execute()]

    @_io
    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        if self._cancels.known_clear(request_id, request_token):
            return False
        since = self._cancels.mark()
        marker = await self._client.get(self._keys.request_cancel(request_id))
        if marker is not None and marker == request_token:
            return True
        self._cancels.remember_clear(request_id, request_token, since=since)
        return False

    async def watch_cancellations(self) -> bool:
        """Answer repeated cancellation checks locally while keyspace events flow (see
        :mod:`sluiceway.broker.cancel_cache`); False when the server does not publish them."""
        waker = self._waker
        if not isinstance(waker, EventWaker) or not waker.allows_key_events("$A"):
            return False
        prefix = self._keys.request_cancel("")
        await waker.watch_prefix(
            prefix,
            lambda key: self._cancels.invalidate(key[len(prefix) :]),
            self._cancels.set_live,
        )
        return True

    async def wait_for_work(self, queues: Sequence[str], block_for: float) -> bool:
        return await self._waker.wait([self._q(q).pending for q in queues], block_for)

    # -- producer side ---------------------------------------------------------------------

    @_io
    async def enqueue(
        self,
        queue: str,
        entries: Sequence[tuple[str, float]],
        *,
        markers: Sequence[ActiveMarker] = (),
    ) -> int:
        pending = self._q(queue).pending
        pipe = self._client.pipeline(transaction=not self._keys.cluster)
        for marker in markers:
            pipe.delete(self._keys.request_cancel(marker.request_id))
            active = self._keys.request_active(marker.request_id)
            pipe.set(active, marker.request_token, px=_ms(marker.expire_after) or None)
        if entries:
            pipe.zadd(pending, {member: score for member, score in entries})
        replies = await pipe.execute()
        self._waker.notify(pending)
        return int(replies[-1]) if entries else 0

    @_io
    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        active = self._keys.request_active(request_id)
        cancel = self._keys.request_cancel(request_id)
        ttl = _ms(expire_after)
        if self._keys.same_slot(active, cancel):
            return int(await self._run("cancel", (active, cancel), (ttl,))) == 1
        token = await self._client.get(active)
        if token is None:
            return False
        await self._client.set(cancel, token, px=ttl)
        return True

    @_io_once
    async def pop_result(self, destination: str, block_for: float) -> str | None:
        if block_for <= 0:
            return cast(str | None, await self._client.rpop(destination))
        reply = await self._client.brpop([destination], timeout=block_for)
        return None if reply is None else cast(str, reply[1])

    @_io
    async def result_count(self, destination: str) -> int:
        return int(await self._client.llen(destination))

    # -- result mailboxes -------------------------------------------------------------------

    @property
    def result_wake_mode(self) -> WakeMode:
        """EVENTS when the server publishes list events on keyspace channels (``K`` with
        ``l`` or ``A``): then :meth:`wait_for_result` needs no polling."""
        waker = self._waker
        if isinstance(waker, EventWaker) and waker.allows_key_events("lA"):
            return WakeMode.EVENTS
        return WakeMode.POLLING

    @_io
    async def peek_result(self, destination: str) -> str | None:
        return cast(str | None, await self._client.lindex(destination, -1))

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        if self.result_wake_mode is WakeMode.POLLING:
            await asyncio.sleep(max(0.0, block_for))  # the caller's poll interval
            return False
        await self._watch_result_family(destination)
        return await self._results_ready.wait_unless(
            destination, lambda: self._has_result(destination), block_for
        )

    async def _has_result(self, destination: str) -> bool:
        return await self.peek_result(destination) is not None

    async def _watch_result_family(self, destination: str) -> None:
        """One pattern subscription for every mailbox (``results:req:*``: one pattern an ACL
        can grant, as PSUBSCRIBE needs it written out), or per other result-list family,
        shared by every waiter on this connection."""
        head, sep, _ = destination.rpartition(":")
        prefix = head + sep if sep else destination
        if destination.startswith(MAILBOX_PREFIX):
            prefix = MAILBOX_PREFIX
        waker = cast(EventWaker, self._waker)
        await waker.watch_prefix(prefix, self._results_ready.notify, lambda live: None)

    @_io
    async def expire_result(self, destination: str, after: float) -> None:
        if after <= 0:
            await self._client.delete(destination)
        else:
            await self._client.pexpire(destination, max(1, _ms(after)))

    @_io
    async def is_pending(self, request_id: str) -> bool:
        return bool(await self._client.exists(self._keys.request_active(request_id)))

    @_io
    async def revive(self, request_id: str) -> bool:
        active = self._keys.request_active(request_id)
        cancel = self._keys.request_cancel(request_id)
        if self._keys.same_slot(active, cancel):
            return int(await self._run("revive", (active, cancel), ())) == 1
        token = await self._client.get(active)  # cluster, other slots: best effort
        if token is None or await self._client.get(cancel) != token:
            return False
        return bool(await self._client.delete(cancel))

    # -- inspection (broker.inspect.Inspectable; see redis_inspect) --------------------------

    @_io
    async def queue_counts(self, queues: Sequence[str]) -> list[QueueCounts]:
        return await redis_inspect.queue_counts(self._client, [self._q(q) for q in queues])

    @_io
    async def peek_results(self, destination: str, limit: int) -> list[str]:
        return await redis_inspect.peek_results(self._client, destination, limit)

    @_io
    async def remove_result(self, destination: str, record: str) -> bool:
        return int(await self._client.lrem(destination, -1, record)) == 1

    async def check_permissions(self, *, consumer: bool = True) -> None:
        """BrokerError naming the ACL permission this user lacks for the processor's work (or,
        not ``consumer``, the coordinator's: no retry set), at start rather than later
        (``redis_probe.check_permissions``)."""
        keys = self._keys
        families = [keys.request_active("probe"), keys.request_cancel("probe")]
        families += [f"{PROBE_PREFIX}check", *([keys.retry_queue_name] if consumer else [])]
        await check_permissions(self._client, [lua.source(n) for n in lua.SCRIPT_NAMES], families)

    async def ping(self) -> None:
        try:
            await self._client.ping()
        except (RedisError, OSError) as exc:
            raise BrokerError(f"redis unreachable: {exc}") from exc

    async def aclose(self) -> None:
        if self._failover is not None:
            await self._failover.aclose()
        if self._batcher is not None:
            await self._batcher.aclose()
        await self._waker.aclose()
        await self._client.aclose()


def _url(options: BrokerOptions) -> str:
    url = options.url or str(options.settings.get("url") or "") or os.environ.get("REDIS_URL", "")
    if not url:
        raise ConfigError("redis-sortedset needs a url (or REDIS_URL)", field="url")
    return url


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


async def open_redis_broker(options: BrokerOptions) -> Broker:
    """Open the ``redis-sortedset`` broker described by ``options`` (transport config keys)."""
    settings: Mapping[str, object] = options.settings
    mode = str(settings.get("mode") or "standalone")
    client = connect_redis(
        _url(options),
        mode=mode,
        addrs=_strings(settings.get("addrs")),
        master_name=str(settings.get("master_name") or ""),
    )
    retry = str(settings.get("retry_queue_name") or DEFAULT_RETRY_QUEUE)
    keyspace = Keyspace(cluster=mode == "cluster", retry_queue_name=retry)
    try:
        await client.ping()
        waker = await make_waker(client, cluster=keyspace.cluster)
    except (RedisError, OSError) as exc:
        why = await failure_text(exc, client)
        await client.aclose()
        raise BrokerError(f"redis unreachable at open: {why}") from exc
    broker = RedisBroker(client, keyspace=keyspace, waker=waker, failover=watch_failovers(client))
    try:
        await broker.watch_cancellations()
    except (RedisError, OSError) as exc:
        _log.warning("cancellation events unavailable, checks read Redis: %s", exc)
    return broker
