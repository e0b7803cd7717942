from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.router.trust import HeaderTrust

RAW = [
    (b"x-llm-d-inference-objective", b"vip"),
    (b"x-gateway-inference-fairness-id", b"t"),
    (b"content-type", b"application/json"),
]


def test_open_trust_keeps_everything() -> None:
    trust = HeaderTrust()
    assert trust.open and trust.filter("1.2.3.4", RAW) == RAW


def test_cidr_trust() -> None:
    trust = HeaderTrust.build(["10.0.0.0/8"])
    assert trust.filter("10.1.2.3", RAW) == RAW
    assert trust.filter("192.168.1.1", RAW) == [(b"content-type", b"application/json")]
    assert trust.filter(None, RAW) == [(b"content-type", b"application/json")]


def test_shared_secret_is_checked_and_never_forwarded() -> None:
    trust = HeaderTrust.build([], "X-Gateway-Secret", "s3cret")
    good = [*RAW, (b"x-gateway-secret", b"s3cret")]
    assert trust.filter("8.8.8.8", good) == RAW
    bad = [*RAW, (b"x-gateway-secret", b"nope")]
    assert trust.filter("8.8.8.8", bad) == [(b"content-type", b"application/json")]


def test_bad_settings_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"trustedSources.cidrs\[0\]"):
        HeaderTrust.build(["not-a-net"])
    with pytest.raises(ConfigError, match="trustedSources"):
        HeaderTrust.build([], "X-Secret", "")


def test_behind_keys_nobody_is_trusted_without_sources_and_keys_stay_behind() -> None:
    keyed = HeaderTrust().behind_keys()
    assert not keyed.open
    with_key = [*RAW, (b"authorization", b"Bearer k1"), (b"x-api-key", b"k1")]
    assert keyed.filter("10.1.2.3", with_key) == [(b"content-type", b"application/json")]


def test_behind_keys_configured_sources_still_decide() -> None:
    keyed = HeaderTrust.build(["10.0.0.0/8"]).behind_keys()
    with_key = [*RAW, (b"authorization", b"Bearer k1")]
    assert keyed.filter("10.1.2.3", with_key) == RAW
    assert keyed.filter("8.8.8.8", with_key) == [(b"content-type", b"application/json")]
