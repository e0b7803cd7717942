"""Tenant fairness inside a band across router replicas: which of the other replicas' waiting
demand this one leaves room for (pure; no I/O).

Each replica states, for every band it queues requests in, its usage there (requests in
flight; for a token-fair band the weighted tokens in flight), what one more request adds to it
(``unit``), how many requests wait, and which tenants they belong to (fairness ids as short
tags). A tenant queued on k replicas counts 1/k on each, so a replica's *weight* in a band is
the number of tenants it serves there, each split over the replicas it reaches; the weights
of all waiting replicas add up to the band's number of waiting tenants.

Between replicas the band is shared max-min by usage per weight (what each of a replica's
tenants holds in the pool, were each spread evenly): a replica leaves the room another waits
for in the same band when a tenant of that replica, given one more request, would still hold
no more than this replica's tenants do now. The poorest replica never yields, so room is always
taken; equal ones race for it, and the ledger grants first come. Inside a replica its own
fairness policy orders its tenants as before.

Exact when a tenant's requests reach one replica, or when the tenants sharing a replica reach
the same replicas (a load balancer spreading every tenant over all of them): each tenant then
holds 1/T of the band's room within one request per replica. Otherwise it is approximate (a
replica splits its room evenly between its tenants, while their weights differ).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["MAX_TENANTS", "BandDemand", "decode", "encode", "fair_reserve", "tenant_tag"]

MAX_TENANTS = 64  # tenants stated per band and replica: bounds each call's payload
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class BandDemand:
    """One replica's waiting demand in one band, as the others see it."""

    band: int
    usage: float
    waiting: int
    tenants: tuple[str, ...]
    unit: float = 1.0


def tenant_tag(fairness_id: str) -> str:
    """A fixed-size tag: fairness ids are free text and may be long or hold separators."""
    return hashlib.blake2b(fairness_id.encode(), digest_size=4).hexdigest()


def encode(demands: Iterable[BandDemand]) -> str:
    """``band|usage|unit|waiting|tag,tag;...`` (only bands with requests waiting)."""
    parts = []
    for d in demands:
        if d.waiting > 0:
            tags = ",".join(d.tenants[:MAX_TENANTS])
            parts.append(f"{d.band}|{d.usage:.6g}|{d.unit:.6g}|{d.waiting}|{tags}")
    return ";".join(parts)


def decode(text: str) -> tuple[BandDemand, ...]:
    out = []
    for part in text.split(";"):
        if part:
            band, usage, unit, waiting, tags = part.split("|")
            tenants = tuple(t for t in tags.split(",") if t)
            out.append(BandDemand(int(band), float(usage), int(waiting), tenants, float(unit)))
    return tuple(out)


def fair_reserve(mine: Mapping[int, BandDemand], others: Iterable[BandDemand]) -> dict[int, int]:
    """Band -> the requests other replicas wait for there that this one leaves room for."""
    by_band: dict[int, list[BandDemand]] = {}
    for d in others:
        if d.band in mine and d.waiting > 0:
            by_band.setdefault(d.band, []).append(d)
    out: dict[int, int] = {}
    for band, theirs in by_band.items():
        me = mine[band]
        reach = Counter(t for d in (me, *theirs) for t in set(d.tenants))
        level = me.usage / _weight(me, reach)
        n = sum(d.waiting for d in theirs if d.usage / _weight(d, reach) + d.unit <= level + _EPS)
        if n:
            out[band] = n
    return out


def _weight(d: BandDemand, reach: Counter[str]) -> float:
    """Tenants served here, each counted 1/k when queued on k replicas (1 when none named)."""
    tags = set(d.tenants)
    return sum(1 / reach[t] for t in tags) if tags else 1.0
