"""Shared state of several replicas over Redis: who is alive, and the pool's capacity leases.

Files:

- ``replicas``: a replica set per group (expiring membership with a held count per member,
  changed by one script), the one thing in Redis;
- ``leases``: the router's client of it (batched, renewed, a local share while Redis is away);
  ``waiters``: the requests waiting for a lease, by band; ``share``: the pure arithmetic
  between a capacity view and the ledger; ``remote_eviction``: which other replicas to ask for
  evictions; ``fair_share``: which other replicas' tenants a band leaves room for;
  ``metrics``: its state as metrics;
- ``membership``: the processor's client (its in-flight count, and the live processors of a
  pool its gates split their targets by).
"""

from sluiceway.ledger.leases import LeaseLedger, LedgerSettings
from sluiceway.ledger.replicas import Replica, ReplicaSet, SyncResult, replica_id

__all__ = [
    "LeaseLedger",
    "LedgerSettings",
    "Replica",
    "ReplicaSet",
    "SyncResult",
    "replica_id",
]
