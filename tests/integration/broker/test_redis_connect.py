"""Redis clients from addresses: deployment modes named in errors, sentinel masters configured
from the URL (no server needed: clients connect lazily); TLS with a private CA, mutual TLS and
a server name against private servers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from managed_redis import SERVER_NAME, Certs, make_certs, start_sentinels
from restartable_redis import restartable_redis
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.broker.redis import open_redis_broker
from sluiceway.broker.redis_connect import connect_redis
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.localservices import RedisServer


@pytest.mark.parametrize(
    ("mode", "addrs", "master"),
    [("sentinel", (), "m"), ("sentinel", ("h:1",), ""), ("ring", (), "")],
)
def test_bad_modes_name_the_field(mode: str, addrs: tuple[str, ...], master: str) -> None:
    with pytest.raises(ConfigError) as err:
        connect_redis("redis://h:1/0", mode=mode, addrs=addrs, master_name=master)
    assert err.value.field == "mode"


async def test_sentinel_masters_take_auth_db_and_tls_from_the_url() -> None:
    client = connect_redis(
        "rediss://app:secret@ignored:1/3", mode="sentinel", addrs=("s1:26379",), master_name="m"
    )
    try:
        kwargs = client.connection_pool.connection_kwargs
        assert (kwargs["username"], kwargs["password"], kwargs["db"]) == ("app", "secret", 3)
        assert "SSL" in client.connection_pool.connection_class.__name__
        assert "host" not in kwargs  # the master's address comes from the sentinels
    finally:
        await client.aclose()


# -- TLS against private servers: a private CA, mutual TLS, a server name -------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("tls"))


async def _ping(url: str) -> bool:
    client = connect_redis(url)
    try:
        return bool(await client.ping())
    finally:
        await client.aclose()


@pytest.mark.redis
async def test_a_private_ca_is_trusted_through_the_url_and_nothing_else(
    certs: Certs, redis_factory: Callable[..., RedisServer]
) -> None:
    server = redis_factory(tls=True, args=certs.server_args(clients=False))
    with pytest.raises(RedisConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        await _ping(server.url)
    assert await _ping(f"{server.url}?{certs.query()}")


@pytest.mark.redis
async def test_mutual_tls_presents_the_client_certificate_from_the_url(
    certs: Certs, redis_factory: Callable[..., RedisServer]
) -> None:
    server = redis_factory(tls=True, args=certs.server_args(clients=True))
    with pytest.raises(RedisConnectionError):
        await _ping(f"{server.url}?{certs.query()}")
    assert await _ping(f"{server.url}?{certs.query(client=True)}")


@pytest.mark.redis
async def test_the_server_name_checked_is_the_one_the_url_names(
    certs: Certs, redis_factory: Callable[..., RedisServer]
) -> None:
    server = redis_factory(tls=True, args=certs.server_args(clients=False))
    base = f"{server.url}?{certs.query()}"
    assert await _ping(f"{base}&ssl_server_name={SERVER_NAME}")
    with pytest.raises(RedisConnectionError, match=r"match|mismatch"):
        await _ping(f"{base}&ssl_server_name=other.internal")


@pytest.mark.redis
async def test_the_broker_and_its_quota_stores_open_over_mutual_tls(
    certs: Certs, redis_factory: Callable[..., RedisServer]
) -> None:
    server = redis_factory(tls=True, args=certs.server_args(clients=True))
    options = BrokerOptions(url=f"{server.url}?{certs.query(client=True)}")
    broker = await open_redis_broker(options)
    try:
        stores = await open_quota_stores("redis-sortedset", broker, options)
        await broker.enqueue("q", [("m", 1.0)])
        assert await broker.backlog("q") == 1
        other = stores(f"{server.host}:{server.port}")  # a gate's bare host:port: same server
        assert other is stores("")
        await stores.aclose()
    finally:
        await broker.aclose()


# -- reconnection: a restart leaves every pooled connection stale ---------------------------


@pytest.mark.redis
@pytest.mark.serial
async def test_after_a_restart_every_command_is_sent_again_on_a_fresh_connection(
    tmp_path: Path,
) -> None:
    with restartable_redis(tmp_path) as server:
        broker = await open_redis_broker(BrokerOptions(url=server.url))
        try:
            await broker.enqueue("q", [("m", 1.0)])
            # 20 held connections in the pool, as 20 waiting clients leave them
            await asyncio.gather(*(broker.backlog("q") for _ in range(20)))
            server.restart()
            answers = await asyncio.gather(
                *(broker.backlog("q") for _ in range(20)), return_exceptions=True
            )
        finally:
            await broker.aclose()
    assert answers == [1] * 20


# -- Sentinel: three sentinels watching a private master ------------------------------------


async def _backlog_through(url: str) -> int:
    broker = await open_redis_broker(BrokerOptions(url=url))
    try:
        await broker.enqueue("q", [("m", 1.0)])
        return await broker.backlog("q")
    finally:
        await broker.aclose()


@pytest.mark.redis
@pytest.mark.serial
async def test_the_broker_finds_its_master_through_three_sentinels(
    redis_factory: Callable[..., RedisServer],
) -> None:
    found = start_sentinels(redis_factory, redis_factory(keyspace_events="KEA"))
    assert await _backlog_through(found.url()) == 1
    raw = connect_redis(found.master.url)
    try:
        assert await raw.zcard("q") == 1  # on the master the sentinels name
    finally:
        await raw.aclose()


@pytest.mark.redis
@pytest.mark.serial
async def test_sentinels_and_master_with_passwords_of_their_own(
    redis_factory: Callable[..., RedisServer],
) -> None:
    master = redis_factory(args=["--requirepass", "master-pw-1"])
    found = start_sentinels(
        redis_factory, master, master_password="master-pw-1",
        sentinel_args=["--requirepass", "sentinel-pw-2"],
    )  # fmt: skip
    good = found.url(userinfo=":master-pw-1@", query="sentinel_password=sentinel-pw-2")
    assert await _backlog_through(good) == 1
    with pytest.raises(BrokerError) as err:
        await _backlog_through(found.url(userinfo=":master-pw-1@"))
    text = str(err.value)
    assert "no master named 'mymaster' through the sentinels" in text, text
    assert text.count("127.0.0.1:") == 3 and "authenticated" in text, text  # each sentinel
    assert "master-pw-1" not in text


@pytest.mark.redis
@pytest.mark.serial
async def test_master_and_sentinels_on_tls_only(
    certs: Certs, redis_factory: Callable[..., RedisServer]
) -> None:
    tls = [*certs.server_args(clients=False), "--tls-replication", "yes"]
    master = redis_factory(tls=True, args=tls)
    found = start_sentinels(redis_factory, master, sentinel_args=tls, tls=True)
    assert await _backlog_through(found.url(tls=True, query=certs.query())) == 1
    with pytest.raises(
        BrokerError, match="no master named 'mymaster' through the sentinels"
    ) as err:
        await _backlog_through(found.url(tls=True))  # the private CA not given
    assert str(err.value).count("CERTIFICATE_VERIFY_FAILED") == 3, str(err.value)
