"""``publish``, ``results``, ``cancel`` and ``status`` as child processes, on SQLite and Redis
(plain, mutual TLS with a private CA, behind three sentinels): output and exit codes as a user
sees them."""

from __future__ import annotations

import json
import secrets
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_harness import Child, Ran, sluiceway

from managed_redis import make_certs, start_sentinels
from sluiceway.broker.base import Broker, BrokerOptions, ClaimAsk, ResultWrite
from sluiceway.broker.redis import open_redis_broker
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.wire import decode_envelope

RESULTS = "results-list"


@dataclass
class Where:
    flags: list[str]
    broker: Broker


def _managed_redis_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A Redis as managed services run it: mutual TLS with a private CA, or a master behind
    three sentinels, both with passwords of their own."""
    start = request.getfixturevalue("redis_factory")
    if kind == "redis-mutual-tls":
        certs = make_certs(tmp_path / "tls")
        server = start(tls=True, args=[*certs.server_args(clients=True), "--requirepass", "pw-1"])
        return f"rediss://:pw-1@127.0.0.1:{server.port}/0?{certs.query(client=True)}"
    master = start(args=["--requirepass", "master-pw"])
    found = start_sentinels(
        start, master, master_password="master-pw", sentinel_args=["--requirepass", "s-pw"]
    )
    return found.url(userinfo=":master-pw@", query="sentinel_password=s-pw")


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-mutual-tls", marks=pytest.mark.redis),
        pytest.param("redis-sentinel", marks=[pytest.mark.redis, pytest.mark.serial]),
    ]
)
async def where(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Where]:
    if request.param == "sqlite":
        db = tmp_path / "q.db"
        broker = await open_sqlite_broker(BrokerOptions(url=str(db)))
        flags = ["--transport", "sqlite", "--url", str(db)]
    else:
        url = request.getfixturevalue("redis_server").url
        if request.param != "redis":
            url = _managed_redis_url(request.param, request, tmp_path)
        broker = await open_redis_broker(BrokerOptions(url=url))
        flags = ["--url", url]
    yield Where(flags, broker)
    await broker.aclose()


def run(where: Where, *args: str) -> Ran:
    return sluiceway(*args, *where.flags)


async def answer_all(broker: Broker, queue: str) -> list[str]:
    """Answer every pending request of ``queue`` 200, as a processor would; their ids."""
    answered = []
    for entry in await broker.peek(queue, 100):
        envelope = decode_envelope(entry.member)
        owner = secrets.token_hex(8)
        ask = ClaimAsk(entry, envelope.id, envelope.request_token, owner, entry.score)
        (outcome,) = await broker.claim_many([ask])
        assert outcome.claim is not None
        record = json.dumps({"id": envelope.id, "status_code": 200, "payload": "ok"})
        write = ResultWrite(RESULTS, record, envelope.id, envelope.request_token)
        assert await broker.ack(outcome.claim, write)
        answered.append(envelope.id)
    return answered


def ids_of(ran: Ran) -> list[str]:
    return [json.loads(line)["id"] for line in ran.out.splitlines()]


async def test_publish_prints_the_ids_it_queued_with_the_payload_asked(
    where: Where, tmp_path: Path
) -> None:
    ran = run(where, "publish", "premium", "3", "--prompt", "hello", "--max-tokens", "7")
    assert ran.code == 0, ran
    ids = ran.out.split()
    assert len(ids) == 3 and all(i.startswith("premium-") for i in ids)
    assert "queued 3 on team-premium" in ran.err
    entries = await where.broker.peek("team-premium", 10)
    envelopes = [decode_envelope(e.member) for e in entries]
    assert sorted(e.id for e in envelopes) == sorted(ids)
    assert envelopes[0].data.payload == {"model": "Qwen/Qwen3-32B", "prompt": "hello",
                                         "max_tokens": 7}  # fmt: skip
    assert envelopes[0].data.metadata == {"team": "premium"}
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
    ran = run(where, "publish", "premium", "--queue", "other", "--payload", str(payload))
    assert ran.code == 0, ran
    (entry,) = await where.broker.peek("other", 10)
    assert decode_envelope(entry.member).data.payload["messages"][0]["content"] == "x"


async def test_results_look_by_default_and_consume_only_when_asked(where: Where) -> None:
    assert run(where, "publish", "t", "3").code == 0
    answered = await answer_all(where.broker, "team-t")
    look = run(where, "results", "--result-queue", RESULTS)
    assert look.code == 0 and ids_of(look) == answered
    assert await where.broker.result_count(RESULTS) == 3
    one = run(where, "results", "--result-queue", RESULTS, "--count", "1")
    assert ids_of(one) == answered[:1]
    picked = run(where, "results", "--result-queue", RESULTS, "--id", answered[2])
    assert ids_of(picked) == [answered[2]]
    taken = run(where, "results", "--result-queue", RESULTS, "--id", answered[1], "--consume")
    assert ids_of(taken) == [answered[1]]
    assert await where.broker.result_count(RESULTS) == 2
    rest = run(where, "results", "--result-queue", RESULTS, "--consume", "--wait", "0.1")
    assert ids_of(rest) == [answered[0], answered[2]]
    assert await where.broker.result_count(RESULTS) == 0
    missing = run(where, "results", "--result-queue", RESULTS, "--id", "nope")
    assert missing.code == 1 and "no result yet for nope" in missing.err


async def test_cancel_marks_queued_requests_and_reports_unknown_ids(where: Where) -> None:
    ran = run(where, "publish", "t", "2")
    first, second = ran.out.split()
    cancelled = run(where, "cancel", first, "unknown-id")
    assert cancelled.code == 1
    assert f"cancelled: {first}" in cancelled.out
    assert "not found (unknown or finished): unknown-id" in cancelled.out
    tokens = {
        envelope.id: envelope.request_token
        for envelope in (decode_envelope(e.member) for e in await where.broker.peek("team-t", 2))
    }
    assert await where.broker.is_cancelled(first, tokens[first])
    assert not await where.broker.is_cancelled(second, tokens[second])
    assert run(where, "cancel", second).code == 0


async def test_status_counts_each_queue(where: Where) -> None:
    assert run(where, "publish", "a", "3", "--ttl", "600").code == 0
    assert run(where, "publish", "b", "1").code == 0
    await answer_all(where.broker, "team-b")
    ran = run(where, "status", "team-a", "team-b", "--json")
    assert ran.code == 0, ran
    report = json.loads(ran.out)
    a, b = report["queues"]
    assert (a["queue"], a["pending"], a["claimed"], a["retrying"], a["invalid"]) == (
        "team-a", 3, 0, 0, 0,
    )  # fmt: skip
    assert 590 < a["oldest_deadline"] - report["now"] <= 600
    assert (b["pending"], b["oldest_deadline"]) == (0, None)
    table = run(where, "status", "team-a")
    assert table.code == 0 and "team-a" in table.out and "in 59" in table.out


async def test_status_shows_pools_from_the_config(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    transport = tmp_path / "transport.json"
    queues = [
        {"queue_name": "team-a", "igw_base_url": "http://x:1", "worker_pool_id": "gpu"},
        {"queue_name": "team-b", "igw_base_url": "http://x:1"},
    ]
    transport.write_text(json.dumps({"path": str(db), "queues": queues}))
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps([{"id": "gpu", "workers": 3}]))
    broker = await open_sqlite_broker(BrokerOptions(url=str(db)))
    await broker.aclose()
    assert sluiceway("publish", "a", "2", "--transport", "sqlite", "--url", str(db)).code == 0
    ran = sluiceway(
        "status", "--transport", "sqlite", "--transport-config-file", str(transport),
        "--pool-config-file", str(pools), "--json",
    )  # fmt: skip
    assert ran.code == 0, ran
    report = json.loads(ran.out)
    assert [q["queue"] for q in report["queues"]] == ["team-a", "team-b"]
    assert {p["pool"]: p["workers"] for p in report["pools"]} == {"gpu": 3, "default": 64}


def test_publish_warns_when_a_time_scale_has_no_shared_anchor(tmp_path: Path) -> None:
    db = ["--transport", "sqlite", "--url", str(tmp_path / "q.db")]
    scaled = sluiceway("publish", "a", "--time-scale", "10", *db)
    assert scaled.code == 0 and "warning: --time-scale 10 without --time-anchor" in scaled.err
    anchored = sluiceway("publish", "a", "--time-scale", "10", "--time-anchor", "1700000000", *db)
    assert anchored.code == 0 and "warning" not in anchored.err
    clock = {"SLUICEWAY_TIME_SCALE": "10", "SLUICEWAY_TIME_ANCHOR": "1700000000"}
    shared = sluiceway("publish", "a", *db, env=clock)
    assert shared.code == 0 and "warning" not in shared.err


async def test_status_watch_redraws_until_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    flags = ["--transport", "sqlite", "--url", str(db)]
    assert sluiceway("publish", "a", "2", *flags).code == 0
    child = Child(tmp_path / "watch.log", "status", "team-a", *flags, "--watch", "0.05")
    try:
        await child.logged("team-a")
        assert sluiceway("publish", "a", "1", *flags).code == 0
        text = await child.logged(r"team-a\s*│\s*3\s*│", regex=True)
        assert text.count("sluiceway status") >= 2
        child.proc.send_signal(signal.SIGINT)
        assert child.proc.wait(timeout=20) == 0
    finally:
        child.kill()
