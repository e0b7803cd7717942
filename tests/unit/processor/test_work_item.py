"""A work item: its owner token marks the claim as a sluiceway processor's (16 characters, as
upstream's), its quota holder is unique per claim, and what the path reads on every step is
taken from the envelope once."""

from __future__ import annotations

import json
import re

from sluiceway.broker.base import Claim, claim_key
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.specs import QueueSpec
from sluiceway.processor.work_item import OWNER_PREFIX, WorkItem, holder_token, new_owner
from sluiceway.wire import decode_envelope
from sluiceway.wire.lanes import LANES

DEADLINE = 1_700_000_060.0


def test_owner_tokens_are_ours_sixteen_characters_and_fresh() -> None:
    owners = {new_owner() for _ in range(1000)}
    assert len(owners) == 1000
    for owner in owners:
        assert owner.startswith(OWNER_PREFIX) and len(owner) == 16
        assert re.fullmatch(r"[0-9a-f]+", owner.removeprefix(OWNER_PREFIX))


def test_two_claims_of_one_request_hold_quota_apart() -> None:
    first, second = new_owner(), new_owner()
    assert holder_token("tok", first) != holder_token("tok", second)
    assert holder_token("tok", first) != holder_token("other", first)


def test_the_item_reads_its_request_from_the_envelope() -> None:
    data = {"id": "req-1", "deadline": DEADLINE}
    member = json.dumps({"internal": {}, "request_kind": "plain", "data": data})
    envelope = decode_envelope(member)
    owner = new_owner()
    claim = Claim("q", claim_key("req-1", envelope.request_token), member, DEADLINE, owner, 0.0)
    spec = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw")
    item = WorkItem(
        claim, envelope, spec, LANES[0], QueueLabels("q", "q", "default"), owner, ingested_at=0.0
    )
    assert (item.request_id, item.deadline) == ("req-1", DEADLINE)
    assert item.token == envelope.request_token
    assert item.holder == holder_token(envelope.request_token, owner)
    assert item.attempts_here == 0
