"""One mode's system scaled out: N router replicas and M processors on one pool.

Each router replica is its own ``sluiceway router --coordinator-config`` process (the in-process
stack's router with the coordinator mounted, as production runs it), so the replicas share
nothing but what they share in production: the queues and quota counters on a private Redis,
and (unless ``ledger`` is off, upstream's behaviour) the pool's capacity ledger on the same
Redis. The simulator stays in this process, so every model attempt is still seen. The M
processors run here on their own Redis brokers, processor i dispatching to router i mod N;
clients take the replicas in turn (a round-robin balancer).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import yaml
from prometheus_client import CollectorRegistry

from sluiceway.bench.isolation.modes import ModeSpec
from sluiceway.bench.isolation.plan import Topology
from sluiceway.bench.isolation.stack import (
    Stack,
    coordinator_document,
    model_servers,
    objective_documents,
    processor_spec,
)
from sluiceway.broker import open_broker
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.broker.redis import RedisBroker
from sluiceway.clock import Clock, RealClock
from sluiceway.ledger.membership import ReplicaMembership
from sluiceway.localservices import private_redis
from sluiceway.processor.service import Processor

__all__ = ["POOL_NAME", "router_args", "running_replicas", "started_process"]

POOL_NAME = "llm-d-router"
START_TIMEOUT = 60.0  # wall seconds a router process gets to listen
STOP_TIMEOUT = 15.0


def router_args(
    files: Path, endpoints: tuple[str, ...], clock: Clock, ledger: str | None
) -> list[str]:
    """``sluiceway router`` with the coordinator mounted, quiet, on a free port, on the
    bench's clock; ``ledger``: the capacity ledger's Redis URL (None: each replica alone)."""
    args = [
        "-m", "sluiceway", "router",
        "--config", str(files / "router.yaml"),
        "--endpoints", ",".join(endpoints),
        "--objectives", str(files / "objectives.yaml"),
        "--pool-name", POOL_NAME,
        "--coordinator-config", str(files / "coordinator.yaml"),
        "--port", "0", "--log-level", "warning", "--access-log-sample", "0",
        "--drain-timeout", "1s",
    ]  # fmt: skip
    if isinstance(clock, RealClock):
        args += ["--time-scale", repr(clock.scale), "--time-anchor", repr(clock.anchor)]
    return args + (["--ledger", ledger] if ledger else [])


def _write_files(where: Path, mode: ModeSpec, broker_url: str) -> None:
    (where / "router.yaml").write_text(yaml.safe_dump(mode.router))
    (where / "objectives.yaml").write_text(yaml.safe_dump_all(objective_documents()))
    (where / "coordinator.yaml").write_text(yaml.safe_dump(coordinator_document(broker_url)))


@contextlib.asynccontextmanager
async def started_process(args: list[str], log: Path) -> AsyncIterator[str]:
    """``python ARGS`` until it says ``listening``; its URL. Stopped with SIGTERM (a drain) on
    exit; its log goes to ``log``, quoted when it fails to start."""
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *args, stdout=asyncio.subprocess.PIPE, stderr=err
        )
    assert proc.stdout is not None
    drain: asyncio.Task[bytes] | None = None
    try:
        url = await asyncio.wait_for(_listening(proc.stdout), START_TIMEOUT)
        if url is None:
            raise RuntimeError(f"{args[:3]} exited before listening: {_tail(log)}")
        drain = asyncio.create_task(proc.stdout.read())  # nothing may block on a full pipe
        yield url
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if drain is not None:
            await drain


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


async def _listening(stdout: asyncio.StreamReader) -> str | None:
    while line := await stdout.readline():
        parts = line.decode(errors="replace").split()
        if parts[:1] == ["listening"] and len(parts) >= 3:
            return parts[2]
    return None


@contextlib.asynccontextmanager
async def _processors(
    mode: ModeSpec, routers: list[str], count: int, redis_url: str, clock: Clock
) -> AsyncIterator[None]:
    """``count`` processors on the Redis queues, each with its own broker and quota store, and
    in its pool's replica set as ``sluiceway processor`` joins it (the pool gates' targets
    split between the live processors)."""
    async with contextlib.AsyncExitStack() as stack:
        for i in range(count):
            options = BrokerOptions(url=redis_url, time_scale=clock.scale)
            broker = await open_broker("redis-sortedset", options)
            stack.push_async_callback(broker.aclose)
            stores = await open_quota_stores("redis-sortedset", broker, options)
            stack.push_async_callback(stores.aclose)
            processor = Processor(
                processor_spec(mode, routers[i % len(routers)]),
                broker,
                clock=clock,
                registry=CollectorRegistry(),
                quota_store=stores,
                membership=ReplicaMembership(cast(RedisBroker, broker).client, clock),
            )
            await stack.enter_async_context(processor)
        yield


@contextlib.asynccontextmanager
async def running_replicas(
    mode: ModeSpec,
    topology: Topology,
    *,
    capacity: int,
    clock: Clock,
    endpoints: tuple[str, ...] = (),
    model: str = "",
) -> AsyncIterator[Stack]:
    """Start the scaled-out system for ``mode``; stop it all on exit."""
    with (
        private_redis(keyspace_events="KEA") as redis,
        tempfile.TemporaryDirectory(prefix="sluiceway-replicas-") as tmp,
    ):
        files = Path(tmp)
        _write_files(files, mode, redis.url)
        async with (
            model_servers(endpoints, capacity, clock) as (urls, engines, sim_model),
            contextlib.AsyncExitStack() as stack,
        ):
            args = router_args(files, urls, clock, redis.url if topology.ledger else None)
            routers = [
                await stack.enter_async_context(started_process(args, files / f"router-{i}.log"))
                for i in range(topology.routers)
            ]
            await stack.enter_async_context(
                _processors(mode, routers, topology.processors, redis.url, clock)
            )
            yield Stack(routers[0], model or sim_model, engines, urls, None, tuple(routers))
