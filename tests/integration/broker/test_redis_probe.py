"""What a Redis user may do, learned without CONFIG: notification flags probed with a test key,
and a user the ACL denies refused at open with the permission to grant named."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.redis import RedisBroker, open_redis_broker
from sluiceway.broker.redis_connect import connect_redis
from sluiceway.broker.redis_probe import notify_flags, probe_flags
from sluiceway.broker.wakeup import WakeMode
from sluiceway.errors import BrokerError
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis
NO_CONFIG = "+@all -@admin -@dangerous +script|load +ping +info"


def _user(server: RedisServer, name: str, rules: str) -> str:
    """Create ACL user ``name`` with ``rules`` (keys and channels all, unless the rules say);
    its URL."""
    import redis

    admin = redis.Redis(host=server.host, port=server.port)
    try:
        admin.execute_command("ACL", "SETUSER", name, "reset", "on", ">pw-acl-1", *rules.split())
    finally:
        admin.close()
    return f"redis://{name}:pw-acl-1@{server.host}:{server.port}/0"


@pytest.mark.parametrize(("server_flags", "events"), [("KEA", True), ("Kl", False), ("", False)])
async def test_without_config_the_flags_are_probed(
    redis_factory: Callable[..., RedisServer], server_flags: str, events: bool
) -> None:
    server = redis_factory(keyspace_events=server_flags)
    url = _user(server, "app", f"{NO_CONFIG} ~* &*")
    client = connect_redis(url)
    try:
        flags, how = await notify_flags(client, 0)
        assert "CONFIG denied" in how
        if server_flags == "KEA":
            assert set(flags) >= set("KEz$lg")
        elif server_flags == "Kl":
            assert flags == "Kl"
        else:
            assert flags == ""
        assert await client.dbsize() == 0  # the probe leaves nothing behind
    finally:
        await client.aclose()
    broker = await open_redis_broker(BrokerOptions(url=url))
    try:
        assert isinstance(broker, RedisBroker)
        assert (broker.wake_mode is WakeMode.EVENTS) is events
    finally:
        await broker.aclose()


async def test_a_user_that_may_not_subscribe_probes_no_flags(
    redis_factory: Callable[..., RedisServer],
) -> None:
    server = redis_factory(keyspace_events="KEA")
    client = connect_redis(_user(server, "app", f"{NO_CONFIG} ~*"))  # no channels
    try:
        assert await probe_flags(client, 0) == ""
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("rules", "grant"),
    [
        ("+@all -script|load ~* &*", "+script|load"),
        ("+@all -@transaction ~* &*", "+@transaction"),
        ("+@all ~request-* ~sluiceway:* &*", "~retry-sortedset"),
        ("+@all ~request-* ~retry-sortedset &*", "~sluiceway:*"),
        ("+@all ~retry-sortedset ~request-active:* ~sluiceway:* &*", "~request-cancel:*"),
    ],
)
async def test_a_denied_permission_is_named_at_open(
    redis_factory: Callable[..., RedisServer], rules: str, grant: str
) -> None:
    server = redis_factory(keyspace_events="KEA")
    broker = await open_redis_broker(BrokerOptions(url=_user(server, "app", rules)))
    try:
        assert isinstance(broker, RedisBroker)
        with pytest.raises(BrokerError, match="grant") as err:
            await broker.check_permissions()
        assert grant in str(err.value) and "pw-acl-1" not in str(err.value)
    finally:
        await broker.aclose()
