"""The redis-sortedset broker on a real three-node Redis Cluster (hash tags, cross-slot acks).

A private cluster is started for this module (three masters on free loopback ports, no
replicas). The conformance suite runs against it: every claim script stays in one slot, and the
result lists and request markers that live in other slots take the documented cross-slot paths.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import redis

from brokers.conformance import NOW, QUEUE, BrokerConformance, put, result_for, take
from brokers.peek_order_conformance import PeekOrderConformance
from brokers.quota_conformance import QuotaStoreConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.keys import Keyspace, key_slot
from sluiceway.broker.quota_redis import RedisQuotaStore
from sluiceway.broker.redis import RedisBroker, connect_redis, open_redis_broker
from sluiceway.broker.wakeup import WakeMode
from sluiceway.gates.quota_store import QuotaStore
from sluiceway.localservices import services_required
from sluiceway.ports import free_port

pytestmark = pytest.mark.redis


def _start_node(folder: str, port: int) -> subprocess.Popen[bytes]:
    args = [
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", folder, "--cluster-enabled", "yes",
        "--cluster-config-file", f"nodes-{port}.conf", "--cluster-node-timeout", "5000",
        "--logfile", f"{folder}/redis-{port}.log",
    ]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is valid and free too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with contextlib.suppress(OSError), socket.socket() as probe:
            probe.bind(("127.0.0.1", port + 10000))
            return port


def _cluster_ok(ports: list[int]) -> bool:
    for port in ports:
        with contextlib.suppress(redis.RedisError):
            info = redis.Redis(port=port).cluster("info")
            if info.get("cluster_state") != "ok":
                return False
            continue
        return False
    return True


def _wait(check: object, what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} not ready")


@pytest.fixture(scope="module")
def cluster_ports() -> Iterator[list[int]]:
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        if services_required():
            pytest.fail("redis-server / redis-cli missing")
        pytest.skip("redis-server / redis-cli not installed")
    with tempfile.TemporaryDirectory(prefix="sluiceway-cluster-") as folder:
        ports = [_cluster_port() for _ in range(3)]
        nodes = [_start_node(folder, port) for port in ports]
        try:
            _wait(lambda: all(_ping(p) for p in ports), "cluster nodes")
            subprocess.run(
                ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                 "--cluster-replicas", "0", "--cluster-yes"],
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip
            _wait(lambda: _cluster_ok(ports), "cluster state")
            yield ports
        finally:
            for node in nodes:
                node.terminate()
            for node in nodes:
                node.wait(10)


def _ping(port: int) -> bool:
    with contextlib.suppress(redis.RedisError):
        return bool(redis.Redis(port=port).ping())
    return False


@pytest.fixture
def cluster_url(cluster_ports: list[int]) -> str:
    for port in cluster_ports:
        redis.Redis(port=port).flushall()
    return f"redis://127.0.0.1:{cluster_ports[0]}/0"


async def _cluster_broker(url: str) -> Broker:
    return await open_redis_broker(BrokerOptions(url=url, settings={"mode": "cluster"}))


class TestRedisClusterBroker(BrokerConformance, PeekOrderConformance):
    @pytest.fixture
    async def broker(self, cluster_url: str) -> AsyncIterator[Broker]:
        broker = await _cluster_broker(cluster_url)
        yield broker
        await broker.aclose()


async def test_cluster_mode_polls_and_keeps_claims_in_the_queue_slot(cluster_url: str) -> None:
    broker = await _cluster_broker(cluster_url)
    try:
        assert isinstance(broker, RedisBroker)
        assert broker.wake_mode is WakeMode.POLLING
        keys = broker.keyspace.queue(QUEUE)
        assert len({key_slot(k) for k in (keys.pending, *keys.claim_keys, keys.retry)}) == 1
        assert key_slot("results-list") != key_slot(QUEUE)
        await put(broker, ("a", NOW + 10))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        assert await broker.ack(claim, result_for("a"))
        assert await broker.result_count("results-list") == 1
    finally:
        await broker.aclose()


class TestRedisClusterQuotaStore(QuotaStoreConformance):
    """Concurrency holders hash-tagged beside their count, on the real cluster."""

    @pytest.fixture
    async def store(self, cluster_url: str) -> AsyncIterator[QuotaStore]:
        client = connect_redis(cluster_url, mode="cluster")
        await client.ping()  # as open_redis_broker does: the client learns the slots first
        store = RedisQuotaStore(client, keyspace=Keyspace(cluster=True), owns_client=True)
        yield store
        await store.aclose()
