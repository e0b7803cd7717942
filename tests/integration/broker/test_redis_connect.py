"""Redis clients from URLs: deployment modes named in errors, sentinel masters configured from
the URL (no server needed: clients connect lazily)."""

from __future__ import annotations

import pytest

from sluiceway.broker.redis_connect import connect_redis
from sluiceway.errors import ConfigError


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
