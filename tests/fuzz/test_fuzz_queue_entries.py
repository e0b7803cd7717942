"""Fuzzing of queue entries (issue 26): hostile entries (structure, types, sizes, encodings,
nesting, header names and values, result routes) queued beside a valid one, per broker
(memory, SQLite, Redis and PostgreSQL, each with the hostile inputs its storage can hold:
SQLite and PostgreSQL store text, so no undecodable bytes there). The processor serves the
valid entry, writes exactly one result or one dead letter per hostile entry, and logs no
traceback.

Examples per broker: :data:`EXAMPLES` (``fast`` in ``make test``, ``fuzz`` nightly with
``--hypothesis-profile=fuzz``)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from fuzz_profiles import FUZZ, active_profile
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from integration.processor.processor_harness import guide_entry, guide_settings, rig
from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.memory import MemoryBroker
from sluiceway.broker.postgres import open_postgres_broker
from sluiceway.broker.redis import RedisBroker
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.processor.poison import reserved_keys
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import QueueSpec
from sluiceway.wire import decode_result

pytestmark = pytest.mark.serial

QUEUE, RESULTS = "q", "results-list"
EXAMPLES = {"fast": 12, "fuzz": 500}  # per broker
RESERVED = sorted(reserved_keys((QUEUE,)))
DEADLINE = 4_000_000_000.0

_text = st.text(max_size=12)
_odd = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), _text,
    st.lists(st.integers(), max_size=3), st.dictionaries(_text, _text, max_size=2),
)  # fmt: skip
_routes = st.one_of(st.sampled_from(RESERVED), st.sampled_from(["", "elsewhere"]), _text)
_headers = st.dictionaries(
    st.one_of(_text, st.sampled_from(["x-a", "x a", "x:a", ""])),
    st.one_of(_text, st.sampled_from(["v\r\nx-injected: 1", "v\x00", "ok"])),
    max_size=3,
)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@st.composite
def hostile_entries(draw: st.DrawFn, n: int, text_only: bool) -> str:
    """One hostile member whose id (when readable) is ``h<n>``."""
    data: dict[str, Any] = {"id": f"h{n}", "deadline": DEADLINE}
    kind = draw(st.sampled_from(["garbage", "field", "headers", "route", "nested", "big", "bytes"]))
    if kind == "garbage":
        return f"{draw(st.one_of(_text, st.binary(max_size=20).map(repr)))}#{n}"
    if kind == "field":
        data[draw(st.sampled_from(["id", "deadline", "created", "metadata", "headers",
                                   "endpoint", "payload"]))] = draw(_odd)  # fmt: skip
        if data["id"] != f"h{n}":  # the id itself is bad: keep the member unique
            data["payload"] = n
    elif kind == "headers":
        data["headers"] = draw(_headers)
    elif kind == "route":
        where = draw(st.sampled_from(["data", "internal"]))
        route = draw(_routes)
        if where == "data":
            data["result_queue_name"] = route
        else:
            return json.dumps({"internal": {"result_queue_name": route}, "data": data})
    elif kind == "nested":
        return json.dumps({"data": data}).replace(
            '"deadline"',
            f'"payload":{_deep(draw(st.sampled_from([201, 1000, 50_000])))},"deadline"',
        )
    elif kind == "big":
        data["payload"] = {"prompt": "x" * draw(st.sampled_from([10_000, 300_000]))}
    elif not text_only:  # bytes: what the Redis client hands over for non-UTF-8 bytes
        return json.dumps({"data": data})[:-2] + ',"payload":"\udcff"}}'
    return json.dumps({"data": data})


def _routes_of(member: str) -> set[str]:
    """Where a result of ``member`` may be written: its own route, else the default."""
    found = {RESULTS}
    try:
        top = json.loads(member)
    except (ValueError, RecursionError):
        return found
    for part in ("data", "internal"):
        obj = top.get(part) if isinstance(top, dict) else None
        if isinstance(obj, dict) and isinstance(obj.get("result_queue_name"), str):
            found.add(obj["result_queue_name"] or RESULTS)
    return found


async def _run_example(members: list[str], make_broker: Callable[[], Any]) -> None:
    async with rig() as r:
        broker: Broker = await make_broker()
        now = r.clock.now()
        valid, _ = guide_entry("t", 0, now=now)
        await broker.enqueue(QUEUE, [(m, DEADLINE) for m in members] + [(valid, now + 300)])
        routes = set().union(*(_routes_of(m) for m in members)) - set(RESERVED)
        q = QueueSpec(id=QUEUE, queue_name=QUEUE, igw_base_url=r.url, pool_id="teams")
        settings_ = guide_settings([q], workers=2)
        async with Processor(settings_, broker, clock=r.clock, registry=CollectorRegistry()):
            results = await _gather(broker, routes, len(members) + 1)
        invalid = await _invalid(broker)
        await broker.aclose()
    ids = [res.id for res in results]
    assert len(ids) == len(set(ids)), ids
    assert any(res.id == "t-r-0000" and res.status_code == 200 for res in results)
    assert len(results) - 1 + len(invalid) == len(members), (results, invalid)


async def _invalid(broker: Broker) -> list[str]:
    if isinstance(broker, RedisBroker):  # the dead-letter list, read as an operator would
        key = broker.keyspace.queue(QUEUE).invalid
        return [str(m) for m in await broker.client.lrange(key, 0, -1)]
    found = broker.invalid_entries(QUEUE)  # type: ignore[attr-defined]
    return list(await found if asyncio.iscoroutine(found) else found)


async def _gather(broker: Broker, routes: set[str], expected: int) -> list[Any]:
    """Results of every route until the results and dead letters add up (10 s at most)."""
    out: list[Any] = []
    end = time.monotonic() + 10
    while time.monotonic() < end:
        for route in routes:
            while (raw := await broker.pop_result(route, 0.0)) is not None:
                out.append(decode_result(raw))
        if len(out) + len(await _invalid(broker)) >= expected:
            await asyncio.sleep(0.2)  # a second result of one entry would show up here
            for route in routes:
                while (raw := await broker.pop_result(route, 0.0)) is not None:
                    out.append(decode_result(raw))
            return out
        await asyncio.sleep(0.02)
    return out


def _members(text_only: bool) -> st.SearchStrategy[list[str]]:
    def build(count: int) -> st.SearchStrategy[list[str]]:
        return st.tuples(*(hostile_entries(i, text_only) for i in range(count))).map(list)

    return (
        st.integers(min_value=1, max_value=5).flatmap(build).map(lambda ms: list(dict.fromkeys(ms)))
    )


def _settings() -> settings:
    profile = active_profile()
    count = EXAMPLES["fuzz" if profile == FUZZ else "fast"]
    return settings(settings.get_profile(profile), max_examples=count)


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info]
    assert not loud, [r.getMessage() for r in loud]


async def _memory() -> MemoryBroker:
    return MemoryBroker()


def _postgres_maker(server: Any) -> Callable[[], Any]:
    """A new database on the private server per example (the server goes with the session)."""
    databases = itertools.count()

    async def postgres() -> Broker:
        name = f"fuzz{next(databases)}"
        admin = await asyncpg.connect(server.dsn())
        try:
            await admin.execute(f"CREATE DATABASE {name}")
        finally:
            await admin.close()
        return await open_postgres_broker(BrokerOptions(url=server.dsn(name)))

    return postgres


def _maker(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[], Any]:
    """A fresh, empty broker of kind ``name`` per example."""
    if name == "memory":
        return _memory
    if name == "sqlite":
        return lambda: open_sqlite_broker(
            BrokerOptions(url=str(Path(tempfile.mkdtemp(dir=tmp_path)) / "q.db"))
        )
    if name == "postgres":
        return _postgres_maker(request.getfixturevalue("postgres_server"))
    server = request.getfixturevalue("redis_server")
    url = f"redis://{server.host}:{server.port}"

    async def redis() -> Broker:
        broker = await open_broker("redis-sortedset", BrokerOptions(url=url))
        await broker.client.flushall()  # type: ignore[attr-defined]
        return broker

    return redis


@pytest.mark.parametrize(
    "name", ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis), "postgres"]
)
def test_hostile_entries_beside_a_valid_one(
    name: str, caplog: pytest.LogCaptureFixture, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    text_only = name in ("sqlite", "postgres")  # they store text: no surrogate-escaped bytes
    make = _maker(name, tmp_path, request)

    @_settings()
    @given(_members(text_only))
    def example(members: list[str]) -> None:
        caplog.clear()
        asyncio.run(_run_example(members, make))
        _no_traceback(caplog)

    example()
