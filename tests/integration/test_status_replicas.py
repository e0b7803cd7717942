"""``sluiceway status`` lists the live router and processor replicas of every group on Redis,
found by SCAN, with what each holds, its host, pid and age; in the table and in ``--json``."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import redis.asyncio as aioredis
from rich.console import Console

from sluiceway.clock import RealClock
from sluiceway.ledger.membership import ReplicaMembership
from sluiceway.ledger.replicas import ReplicaSet
from sluiceway.localservices import RedisServer
from sluiceway.status import StatusReport, render
from sluiceway.status_replicas import live_replicas

pytestmark = [pytest.mark.redis]


async def _populate(url: str, ttl: float) -> None:
    """A router replica of pool ``llm`` holding 3 leases, two processors of pool ``teams``."""
    redis = aioredis.Redis.from_url(url, decode_responses=True)
    info = {"role": "router", "host": "r-host", "pid": 41, "started": time.time() - 90}
    try:
        await ReplicaSet(redis, "router/llm").sync("router-a", 3, ttl=ttl, info=info)
        for member, held in (("proc-a", 2), ("proc-b", 1)):
            membership = ReplicaMembership(redis, RealClock(), member=member, lease=ttl)
            membership.join("teams", lambda held=held: held)
            await membership.sync_once()
        await redis.set("sluiceway:replicas:unrelated", "1")  # not an expiry key: ignored
    finally:
        await redis.aclose()


async def test_live_replicas_routers_first_with_their_counts(redis_server: RedisServer) -> None:
    await _populate(redis_server.url, ttl=30)
    redis = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        rows = await live_replicas(redis)
    finally:
        await redis.aclose()
    assert [(r.role, r.pool, r.member, r.held) for r in rows] == [
        ("router", "llm", "router-a", 3),
        ("processor", "teams", "proc-a", 2),
        ("processor", "teams", "proc-b", 1),
    ]
    router, proc = rows[0], rows[1]
    assert (router.host, router.pid) == ("r-host", 41) and 89 <= (router.age or 0) < 120
    assert (proc.host, proc.pid) == (socket.gethostname(), os.getpid())
    assert 0 < proc.expires_in <= 30
    out = io.StringIO()
    Console(file=out, width=160).print(render(StatusReport(0.0, (), (), tuple(rows))))
    text = out.getvalue()
    assert "live replicas" in text and "router-a" in text
    assert re.search(r"\b9\d+s\b", text)  # the router's age, in seconds under two minutes


def test_the_command_lists_them_in_json(redis_server: RedisServer) -> None:
    asyncio.run(_populate(redis_server.url, ttl=60))
    args = [sys.executable, "-m", "sluiceway", "status", "q", "--url", redis_server.url]
    ran = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    replicas = json.loads(ran.stdout)["replicas"]
    assert [(r["role"], r["pool"], r["held"]) for r in replicas] == [
        ("router", "llm", 3),
        ("processor", "teams", 2),
        ("processor", "teams", 1),
    ]
    assert set(replicas[0]) == {
        "role", "pool", "member", "held", "host", "pid", "age", "expires_in"
    }  # fmt: skip
    table = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert table.returncode == 0 and "proc-b" in table.stdout and "processor" in table.stdout
    ledger = subprocess.run(
        [*args, "--ledger", redis_server.url, "--json"], capture_output=True, text=True, timeout=60
    )
    assert len(json.loads(ledger.stdout)["replicas"]) == 3
