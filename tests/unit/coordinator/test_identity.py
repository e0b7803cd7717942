from __future__ import annotations

import pytest

from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.identity import DEFAULT_TENANT, TenantIdentity

HEADER = "x-llm-d-tenant"


def test_without_keys_the_tenant_header_is_trusted() -> None:
    identity = TenantIdentity(tenant_header=HEADER, api_keys={})
    assert identity.tenant({HEADER: "premium"}) == "premium"
    assert identity.tenant({}) == DEFAULT_TENANT


def test_with_keys_the_key_decides_and_the_header_is_ignored() -> None:
    identity = TenantIdentity(tenant_header=HEADER, api_keys={"k1": "premium"})
    assert identity.tenant({"authorization": "Bearer k1", HEADER: "batch"}) == "premium"
    assert identity.tenant({"x-api-key": "k1"}) == "premium"


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer nope"}, {HEADER: "premium"}])
def test_a_missing_or_unknown_key_is_401(headers: dict[str, str]) -> None:
    identity = TenantIdentity(tenant_header=HEADER, api_keys={"k1": "premium"})
    with pytest.raises(RequestRejected) as err:
        identity.tenant(headers)
    assert err.value.status == 401


def test_a_tenant_with_a_colon_is_400() -> None:
    with pytest.raises(RequestRejected) as err:
        TenantIdentity(tenant_header=HEADER, api_keys={}).tenant({HEADER: "a:b"})
    assert err.value.status == 400


def test_has_key_is_the_check_a_router_makes_when_the_coordinator_is_mounted() -> None:
    identity = TenantIdentity(tenant_header=HEADER, api_keys={"k1": "premium"})
    assert identity.has_key({"authorization": "Bearer k1"})
    assert identity.has_key({"x-api-key": "k1"})
    assert not identity.has_key({"authorization": "Bearer nope"})
    assert not identity.has_key({HEADER: "premium"})
