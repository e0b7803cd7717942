"""Sharing a band between tenants across replicas: max-min by usage per weight, a tenant
queued on k replicas counted 1/k on each."""

from __future__ import annotations

from sluiceway.ledger.fair_share import (
    MAX_TENANTS,
    BandDemand,
    decode,
    encode,
    fair_reserve,
    tenant_tag,
)

A, B, C = (tenant_tag(t) for t in ("team-a", "team-b", "team-c"))


def demand(usage: float, waiting: int, *tenants: str, band: int = 0) -> BandDemand:
    return BandDemand(band, usage, waiting, tenants)


def test_tags_are_short_and_free_of_separators() -> None:
    tag = tenant_tag("a|b;c,d:" * 50)
    assert len(tag) == 8 and tag.isalnum()
    assert tenant_tag("team-a") == A != B


def test_encoding_round_trips_and_skips_bands_without_waiting() -> None:
    demands = [
        BandDemand(30, 6.5, 4, (A, B), 1.0),
        BandDemand(-10, 1200.0, 2, (C,), 300.0),
        BandDemand(0, 3.0, 0, (A,)),
    ]
    assert decode(encode(demands)) == tuple(demands[:2])
    assert decode("") == ()
    many = tuple(tenant_tag(str(i)) for i in range(MAX_TENANTS + 10))
    assert len(decode(encode([demand(1, 1, *many)]))[0].tenants) == MAX_TENANTS


def test_a_replica_with_more_in_flight_per_tenant_leaves_the_room() -> None:
    # one tenant each: 6 against 2 in flight, the poorer one waits for 3
    assert fair_reserve({0: demand(6, 5, A)}, [demand(2, 3, B)]) == {0: 3}
    # the poorer replica never yields
    assert fair_reserve({0: demand(2, 3, B)}, [demand(6, 5, A)]) == {}


def test_equal_replicas_race_rather_than_both_yield() -> None:
    assert fair_reserve({0: demand(4, 2, A)}, [demand(4, 2, B)]) == {}
    # one request apart: giving the other one more makes it equal, so it is owed the room
    assert fair_reserve({0: demand(5, 2, A)}, [demand(4, 2, B)]) == {0: 2}


def test_a_replica_serving_two_tenants_weighs_two() -> None:
    # 6 in flight for B and C is 3 per tenant: A at 3 is not owed more, at 2 it is
    assert fair_reserve({0: demand(6, 4, B, C)}, [demand(3, 2, A)]) == {}
    assert fair_reserve({0: demand(6, 4, B, C)}, [demand(2, 2, A)]) == {0: 2}
    # and A's replica, at 4, leaves room to the one with B and C at 3 each
    assert fair_reserve({0: demand(4, 2, A)}, [demand(6, 4, B, C)]) == {0: 4}


def test_a_tenant_on_two_replicas_counts_half_on_each() -> None:
    # A through replicas 1 and 3 (2 in flight each: 4), B and C through replica 2
    one, three = demand(2, 3, A), demand(2, 3, A)
    assert fair_reserve({0: one}, [demand(6, 5, B, C), three]) == {0: 5}  # B, C at 3
    assert fair_reserve({0: one}, [demand(8, 5, B, C), three]) == {}  # at 4: even
    assert fair_reserve({0: demand(8, 5, B, C)}, [one, three]) == {}


def test_only_bands_this_replica_queues_in_count() -> None:
    mine = {30: demand(6, 1, A, band=30)}
    others = [demand(0, 3, B, band=0), demand(0, 2, B, band=30)]
    assert fair_reserve(mine, others) == {30: 2}
    assert fair_reserve({}, others) == {}


def test_token_usage_compares_with_one_request_of_the_other_replica() -> None:
    # token-fair bands state weighted tokens in flight and what one request adds
    rich = BandDemand(0, 3000.0, 2, (A,), 500.0)
    poor = BandDemand(0, 2000.0, 2, (B,), 500.0)
    assert fair_reserve({0: rich}, [poor]) == {0: 2}
    close = BandDemand(0, 2800.0, 2, (B,), 500.0)
    assert fair_reserve({0: rich}, [close]) == {}
