"""Every Redis key sluiceway reads or writes (docs/brokers.md lists them), in one place.

Call sites never concatenate key strings: they ask a :class:`Keyspace` for a queue's keys, a
request's markers or a quota's keys. With ``cluster=True`` the keys that one Lua script touches
together are placed in one Redis Cluster slot with a hash tag:

- a queue's claim keys, its invalid list and its retry set hash to the queue's own slot
  (``{team-batch}:claimed`` lands where ``team-batch`` does, because a key without braces hashes
  on its whole name);
- a quota's holders ZSET lands in the slot of its STRING count.

Standalone names are exactly the upstream names. In cluster mode the retry set is per queue
(``{<queue>}:<retry_queue_name>``) so that parking a retry and dropping its claim stay atomic;
documented in docs/brokers.md.
"""

from __future__ import annotations

import binascii
import hashlib
import json
from dataclasses import dataclass

from sluiceway.broker.base import (
    CLAIM_KEY_SEPARATOR,
    DEFAULT_RETRY_QUEUE,
    claim_key,
    split_claim_key,
)

__all__ = [
    "CLAIM_KEY_SEPARATOR",
    "DEFAULT_BUDGET_KEY",
    "DEFAULT_QUOTA_PREFIX",
    "DEFAULT_RETRY_QUEUE",
    "MAILBOX_DEFAULT_TTL_SECONDS",
    "MAILBOX_PREFIX",
    "Keyspace",
    "LeasedRateKeys",
    "QueueKeys",
    "QuotaKeys",
    "claim_key",
    "hash_tag",
    "invalid_info",
    "key_slot",
    "mailbox",
    "member_digest",
    "split_claim_key",
]

DEFAULT_QUOTA_PREFIX = "quota:"
DEFAULT_BUDGET_KEY = "dispatch-gate-budget"

# The coordinator's per-request result lists (``results:req:<tenant>:<id>``, upstream's
# names). The processor keeps a result there for an hour when its queue sets no
# ``result_ttl_seconds``: a mailbox nobody fetches must not live forever.
MAILBOX_PREFIX = "results:req:"
MAILBOX_DEFAULT_TTL_SECONDS = 3600.0

_ACTIVE = "request-active:"
_CANCEL = "request-cancel:"


def key_slot(key: str) -> int:
    """The Redis Cluster slot of ``key`` (CRC16-XMODEM of its hash tag, mod 16384)."""
    return binascii.crc_hqx(hash_tag(key).encode(), 0) % 16384


def hash_tag(key: str) -> str:
    """The part of ``key`` Redis Cluster hashes: the first non-empty ``{...}``, else the key."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


def mailbox(tenant: str, request_id: str) -> str:
    """LIST: the result of the coordinator's request ``request_id`` of ``tenant``."""
    return f"{MAILBOX_PREFIX}{tenant}:{request_id}"


def member_digest(member: str) -> str:
    """The ``<queue>:invalid:info`` field of a quarantined member: SHA-256 of its bytes, hex."""
    return hashlib.sha256(member.encode("utf-8", "surrogatepass")).hexdigest()


def invalid_info(reason: str, at: float) -> str:
    """The ``<queue>:invalid:info`` value: JSON ``{"reason": ..., "at": <scaled Unix s>}``."""
    return json.dumps({"reason": reason, "at": at}, separators=(",", ":"))


@dataclass(frozen=True)
class QueueKeys:
    """The keys of one request queue (sorted set) and its claim bookkeeping.

    ``invalid`` is the list of quarantined members (upstream's, raw members only);
    ``invalid_info`` the side hash member digest -> JSON reason and time.
    """

    pending: str
    claimed: str
    owners: str
    claims_idx: str
    invalid: str
    retry: str
    invalid_info: str = ""

    @property
    def claim_keys(self) -> tuple[str, str, str]:
        """(claimed, owners, claims_idx): the KEYS prefix every claim script takes."""
        return (self.claimed, self.owners, self.claims_idx)


@dataclass(frozen=True)
class QuotaKeys:
    """Concurrency mode: ``count`` STRING + ``holders`` ZSET; rate-limit mode: ``count`` ZSET."""

    count: str
    holders: str


@dataclass(frozen=True)
class LeasedRateKeys:
    """``redis-leased-rate``: the controller's lease (HASH) and the shared bucket (HASH)."""

    control: str
    state: str


@dataclass(frozen=True)
class Keyspace:
    """Names keys for one deployment. ``cluster`` turns on hash tags (one slot per queue, so its
    scripts stay atomic)."""

    cluster: bool = False
    retry_queue_name: str = DEFAULT_RETRY_QUEUE

    def _beside(self, key: str, suffix: str) -> str:
        """``<key><suffix>``, placed in ``key``'s slot when in cluster mode."""
        if not self.cluster or ("{" in key and hash_tag(key) != key):
            return f"{key}{suffix}"
        return f"{{{key}}}{suffix}"

    def queue(self, queue_name: str) -> QueueKeys:
        """Keys of the queue stored under ``queue_name``."""
        retry = self._beside(queue_name, f":{self.retry_queue_name}")
        return QueueKeys(
            pending=queue_name,
            claimed=self._beside(queue_name, ":claimed"),
            owners=self._beside(queue_name, ":claim-owners"),
            claims_idx=self._beside(queue_name, ":claims-idx"),
            invalid=self._beside(queue_name, ":invalid"),
            retry=retry if self.cluster else self.retry_queue_name,
            invalid_info=self._beside(queue_name, ":invalid:info"),
        )

    def request_active(self, request_id: str) -> str:
        """STRING: the current request token of ``request_id`` (TTL until its deadline)."""
        return f"{_ACTIVE}{request_id}"

    def request_cancel(self, request_id: str) -> str:
        """STRING: the token of a cancelled generation of ``request_id`` (TTL 7 days)."""
        return f"{_CANCEL}{request_id}"

    def quota(self, attribute: str, value: str, *, prefix: str = DEFAULT_QUOTA_PREFIX) -> QuotaKeys:
        """Keys of one quota, e.g. ``quota:team:premium`` and ``quota:team:premium:holders``."""
        return self.quota_of(f"{prefix}{attribute}:{value}")

    def quota_of(self, count_key: str) -> QuotaKeys:
        """The keys of the quota whose count lives at ``count_key``."""
        return QuotaKeys(count=count_key, holders=self._beside(count_key, ":holders"))

    def budget_key(self, key: str = DEFAULT_BUDGET_KEY) -> str:
        """STRING: a dispatch budget in [0, 1] written by an operator (the ``redis`` gate)."""
        return key

    def leased_rate(self, control_key: str, state_key: str = "") -> LeasedRateKeys:
        """The control HASH an external controller writes and the token-bucket state HASH
        (default ``<control_key>:state``, in the control key's slot in cluster mode)."""
        return LeasedRateKeys(control_key, state_key or self._beside(control_key, ":state"))

    def same_slot(self, *keys: str) -> bool:
        """True when every key hashes to one slot (always true standalone)."""
        if not self.cluster:
            return True
        return len({key_slot(k) for k in keys}) <= 1
