"""The private-service fixtures really start, answer and stop."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

import pytest
import redis

from sluiceway.localservices import PrometheusServer, RedisServer


@pytest.mark.redis
def test_private_redis_answers_and_is_empty(redis_server: RedisServer) -> None:
    client = redis.Redis(host=redis_server.host, port=redis_server.port)
    try:
        assert client.ping()
        assert client.dbsize() == 0
        assert client.config_get("notify-keyspace-events")["notify-keyspace-events"]
    finally:
        client.close()


@pytest.mark.redis
def test_redis_factory_honours_keyspace_setting(
    redis_factory: Callable[..., RedisServer],
) -> None:
    server = redis_factory(keyspace_events="")
    client = redis.Redis(host=server.host, port=server.port)
    try:
        assert client.config_get("notify-keyspace-events")["notify-keyspace-events"] == ""
    finally:
        client.close()


@pytest.mark.prometheus
def test_private_prometheus_serves_its_api(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    prom = prometheus_factory([])
    with urllib.request.urlopen(f"{prom.url}/api/v1/query?query=up", timeout=5) as resp:
        body = json.loads(resp.read())
    assert body["status"] == "success"
    assert body["data"]["resultType"] == "vector"
