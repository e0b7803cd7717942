"""Address checks: Redis schemes, broker schemes, http upstreams, SQLite paths, masked
credentials."""

from __future__ import annotations

import pytest

from sluiceway.config.urls import (
    broker_transport,
    check_http_url,
    check_redis_url,
    check_sqlite_path,
    mask_credentials,
)
from sluiceway.errors import ConfigError, without_secrets


@pytest.mark.parametrize("url", ["redis://h:6379/0", "rediss://u:p@h:6380", "unix:///tmp/r.sock"])
def test_redis_urls_with_a_scheme_pass(url: str) -> None:
    assert check_redis_url(url, field="url") == url


def test_a_redis_address_without_scheme_names_the_field_and_suggests_one() -> None:
    with pytest.raises(ConfigError) as info:
        check_redis_url("127.0.0.1:6379", field="--url")
    assert info.value.field == "--url" and "redis://127.0.0.1:6379" in str(info.value)


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("redis://redis:6379/0", "redis-sortedset"),
        ("rediss://user:pw@redis:6380/0", "redis-sortedset"),
        ("memory://", "memory"),
        ("sqlite:///var/lib/queue.db", "sqlite"),
        ("postgres://pg/db", "postgres"),
        ("postgresql://pg/db", "postgres"),
        ("redis:6379", None),
        ("foo", None),
    ],
)
def test_a_broker_address_names_its_transport_by_its_scheme(
    url: str, transport: str | None
) -> None:
    assert broker_transport(url) == transport


def test_upstreams_need_http() -> None:
    assert check_http_url("https://x", field="f") == "https://x"
    with pytest.raises(ConfigError):
        check_http_url("ftp://x", field="f")


@pytest.mark.parametrize("path", ["q.db", "/var/lib/q.db", "sqlite:///tmp/q.db", ":memory:"])
def test_sqlite_paths_pass(path: str) -> None:
    assert check_sqlite_path(path, field="path") == path


@pytest.mark.parametrize("path", ["redis://127.0.0.1:6379/0", "http://x/q.db"])
def test_url_looking_sqlite_paths_are_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="looks like a URL"):
        check_sqlite_path(path, field="path")


def test_passwords_are_masked_and_the_rest_kept() -> None:
    assert mask_credentials("redis://:s3cret@h:6379/0") == "redis://:***@h:6379/0"
    assert mask_credentials("redis://app:s3cret@h/1") == "redis://app:***@h/1"
    assert mask_credentials("redis://h:6379/0") == "redis://h:6379/0"


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("app:hunter22@h:6379", "app:***@h:6379"),
        ("redis://h:6379/0?password=hunter22&db=1", "redis://h:6379/0?password=***&db=1"),
        ("redis://u:hun%40ter22@h/0", "redis://u:***@h/0"),
        ("redis://u:hun@ter22@h/0", "redis://u:***@h/0"),
        (
            "redis+sentinel://:hunter22@a:1,b:2/m?sentinel_password=hunter33",
            "redis+sentinel://:***@a:1,b:2/m?sentinel_password=***",
        ),
        ("https://x/v1?token=hunter22", "https://x/v1?token=***"),
    ],
)
def test_every_form_of_secret_is_masked(url: str, masked: str) -> None:
    assert mask_credentials(url) == masked


def test_a_masked_secret_is_redacted_from_any_later_text() -> None:
    mask_credentials("redis://:hunter77%2Fx@h:6379/0")
    text = "AUTH hunter77/x failed, sent hunter77%2Fx"
    assert without_secrets(text) == "AUTH *** failed, sent ***"
