"""Prometheus settings: credentials become one header; a TTL of 0 refreshes every second."""

from __future__ import annotations

import base64

from sluiceway.signals.settings import DEFAULT_PERIOD, PromAuth, PrometheusSettings


def test_bearer_wins_over_basic() -> None:
    assert PromAuth(bearer_token="t", username="u").header() == {"Authorization": "Bearer t"}


def test_basic_auth_header() -> None:
    header = PromAuth(username="u", password="p").header()["Authorization"]
    assert base64.b64decode(header.removeprefix("Basic ")) == b"u:p"
    assert PromAuth().header() == {}


def test_period_follows_the_cache_ttl() -> None:
    assert PrometheusSettings(cache_ttl=5).period == 5
    assert PrometheusSettings(cache_ttl=0).period == DEFAULT_PERIOD == 1.0
