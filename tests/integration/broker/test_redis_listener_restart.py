"""Issue 26: after a Redis restart the keyspace listener resubscribes by itself, so wake-ups
(the processor's arrivals, the coordinator's result waits) and the cancel cache are live again
within a few seconds, instead of falling back to the backstop poll for good.

The test runs its own redis-server (never a shared one) and restarts it on the same port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.redis import RedisBroker, open_redis_broker
from sluiceway.localservices import free_port

pytestmark = [pytest.mark.redis, pytest.mark.serial]

WAIT = 1.0  # wall seconds a waiter blocks: a timed-out wait shows as >= this
WITHIN = 5.0  # wall seconds after the restart by which wake-ups must be fast again


class RestartableRedis:
    """A private redis-server (keyspace events on) that can be restarted on its port."""

    def __init__(self, binary: str, tmp: Path) -> None:
        self.binary, self.tmp, self.port = binary, tmp, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.tmp),
                "--notify-keyspace-events", "KEA"]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            with (
                contextlib.suppress(OSError),
                __import__("socket").create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return
            time.sleep(0.02)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[RestartableRedis]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    server = RestartableRedis(binary, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def _latency(
    wait: Callable[[], Awaitable[bool]], write: Callable[[], Awaitable[object]]
) -> float:
    """Wall seconds from a write to the wake-up of a waiter armed before it."""
    waiter = asyncio.ensure_future(wait())
    await asyncio.sleep(0.05)  # let the waiter arm and subscribe
    started = time.monotonic()
    with contextlib.suppress(Exception):  # the first write after a restart may fail
        await write()
    try:
        await waiter
    except Exception:  # the broker's own first command after the restart: not a wake-up
        return float("inf")
    return time.monotonic() - started


async def _until_fast(measure: Callable[[], Awaitable[float]], within: float) -> float:
    """Seconds after which ``measure`` reads fast again (< 0.5 s); fails after ``within``."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        if await measure() < 0.5:
            return time.monotonic() - started
    raise AssertionError(f"wake-ups still slow {within} s after the restart")


async def test_wake_ups_return_within_seconds_of_a_redis_restart(
    restartable: RestartableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sluiceway.broker.wakeup")  # lost/back are INFO
    broker = await open_redis_broker(BrokerOptions(url=restartable.url))
    assert isinstance(broker, RedisBroker)
    # Another client writes (a producer, a processor): the wake-ups are the listener's own.
    writer = aioredis.Redis.from_url(restartable.url)
    mailbox, n = "results:req:t:r1", iter(range(10**6))

    def arrival() -> Awaitable[float]:
        return _latency(
            lambda: broker.wait_for_work(["q"], WAIT),
            lambda: writer.zadd("q", {f"m{next(n)}": 1.0}),
        )

    def result() -> Awaitable[float]:
        return _latency(
            lambda: broker.wait_for_result(mailbox, WAIT),
            lambda: writer.rpush(mailbox, "r"),
        )

    async def drain() -> None:
        await writer.delete(mailbox)

    try:
        assert await broker.watch_cancellations()
        assert await arrival() < 0.5
        await drain()
        assert await result() < 0.5
        await drain()
        restartable.stop()
        restartable.start()
        assert await _until_fast(arrival, within=WITHIN) < WITHIN
        await drain()
        assert await _until_fast(result, within=WITHIN) < WITHIN
        assert broker.cancel_checks_cached  # confirmed again with the patterns
    finally:
        await writer.aclose()
        await broker.aclose()
    messages = [r.getMessage() for r in caplog.records if "keyspace listener" in r.getMessage()]
    assert len([m for m in messages if "lost" in m]) == 1
    assert len([m for m in messages if "back after" in m]) == 1
