"""Shared state of several replicas over Redis: who is alive, and the pool's capacity leases.

:mod:`~sluiceway.ledger.replicas` keeps a replica set per group (expiring membership with a
held count per member, changed by one script); :mod:`~sluiceway.ledger.leases` is the router's
client of it (batched, renewed, with a local share while Redis is away);
:mod:`~sluiceway.ledger.share` is the pure arithmetic between a capacity view and the ledger.
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
