"""One Redis address form for every command: hosts, DB, credentials, TLS files, Sentinel, and
errors that name the field and never show a password."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.config.redis_address import parse_redis_address
from sluiceway.errors import ConfigError


def test_a_plain_address_gives_host_port_db_and_credentials() -> None:
    address = parse_redis_address("redis://app:pw%2Fx@h:6380/3", field="url")
    assert (address.hosts, address.db) == ((("h", 6380),), 3)
    assert (address.username, address.password) == ("app", "pw/x")
    assert address.tls is None and not address.sentinel
    assert address.shown == "redis://app:***@h:6380/3"


def test_options_replace_the_userinfo_and_the_path() -> None:
    address = parse_redis_address("redis://h?password=pw123&username=u&db=4", field="url")
    assert (address.username, address.password, address.db) == ("u", "pw123", 4)
    assert "pw123" not in address.shown


def test_tls_files_come_from_the_options(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    url = f"rediss://h:6380/0?ssl_ca_certs={ca}&ssl_server_name=redis.internal"
    tls = parse_redis_address(url, field="url").tls
    assert tls is not None and (tls.ca_file, tls.server_name) == (str(ca), "redis.internal")
    assert tls.check_hostname and tls.cert_reqs == "required"


def test_a_sentinel_address_lists_the_sentinels_and_names_the_master() -> None:
    url = "rediss+sentinel://:pw123@s1,s2:26380,[::1]:26381/mymaster/2?sentinel_password=spw45"
    address = parse_redis_address(url, field="url")
    assert address.hosts == (("s1", 26379), ("s2", 26380), ("::1", 26381))
    assert (address.master_name, address.db, address.password) == ("mymaster", 2, "pw123")
    assert address.sentinel_password == "spw45" and address.sentinel_tls
    assert "pw123" not in address.shown and "spw45" not in address.shown


def test_the_processor_sentinel_keys_become_the_same_address() -> None:
    address = parse_redis_address("redis://:pw123@ignored:1/5", field="url")
    found = address.with_sentinels(["a:26379", "b"], "m", field="addrs")
    assert (found.hosts, found.master_name, found.db) == ((("a", 26379), ("b", 26379)), "m", 5)


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("app:hunter22@h:6379", "did you mean redis://app:***@h:6379"),
        ("redis://h?colour=red", "unknown option 'colour'"),
        ("redis://h?ssl_ca_certs=/x", "needs a rediss://"),
        ("rediss://h?ssl_ca_certs=/no/such/ca.crt", "no file at /no/such/ca.crt"),
        ("redis://h?sentinel_password=hunter22", "needs a redis+sentinel://"),
        ("redis+sentinel://s1:26379", "name the master"),
        ("redis://h:99999/0", "port"),
        ("redis://h/x", "database 'x'"),
        ("rediss://h?ssl_cert_reqs=maybe", "ssl_cert_reqs"),
    ],
)
def test_bad_addresses_name_the_field_and_hide_the_password(url: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_redis_address(url, field="--url")
    assert err.value.field == "--url" and needle in str(err.value)
    assert "hunter22" not in str(err.value)


def test_mutual_tls_needs_the_certificate_and_its_key(tmp_path: Path) -> None:
    cert = tmp_path / "c.crt"
    cert.write_text("x")
    with pytest.raises(ConfigError, match="both ssl_certfile and ssl_keyfile"):
        parse_redis_address(f"rediss://h?ssl_certfile={cert}", field="url")
