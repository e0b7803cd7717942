"""Redis key names (as docs/brokers.md lists them) and cluster hash tags."""

from __future__ import annotations

import pytest

from sluiceway.broker.keys import Keyspace, claim_key, hash_tag, key_slot, split_claim_key


def test_standalone_names_are_the_upstream_names() -> None:
    keys = Keyspace().queue("team-batch")
    assert (keys.pending, keys.claimed, keys.owners, keys.claims_idx, keys.invalid) == (
        "team-batch",
        "team-batch:claimed",
        "team-batch:claim-owners",
        "team-batch:claims-idx",
        "team-batch:invalid",
    )
    assert keys.retry == "retry-sortedset"
    assert Keyspace(retry_queue_name="my-retries").queue("q").retry == "my-retries"


def test_request_markers_and_quota_keys() -> None:
    space = Keyspace()
    assert space.request_active("r1") == "request-active:r1"
    assert space.request_cancel("r1") == "request-cancel:r1"
    quota = space.quota("team", "premium")
    assert (quota.count, quota.holders) == ("quota:team:premium", "quota:team:premium:holders")
    assert space.quota("userid", "u", prefix="q-").count == "q-userid:u"


def test_claim_keys_join_id_and_token_with_a_nul() -> None:
    key = claim_key("batch:1", "ab" * 16)
    assert key == "batch:1\x00" + "ab" * 16
    assert split_claim_key(key) == ("batch:1", "ab" * 16)


@pytest.mark.parametrize(
    ("key", "tag"),
    [("team", "team"), ("{a}b", "a"), ("x{a}{b}", "a"), ("{}a", "{}a"), ("a{", "a{")],
)
def test_hash_tag_follows_the_cluster_rule(key: str, tag: str) -> None:
    assert hash_tag(key) == tag


def test_key_slot_matches_known_redis_slots() -> None:
    # Values from the Redis Cluster specification's CRC16 (XMODEM) reference.
    assert key_slot("123456789") == 0x31C3 % 16384
    assert key_slot("{user1000}.following") == key_slot("user1000")


@pytest.mark.parametrize("queue", ["team-batch", "q{tenant}", "a:b"])
def test_cluster_keys_of_a_queue_share_its_slot(queue: str) -> None:
    keys = Keyspace(cluster=True).queue(queue)
    slots = {key_slot(k) for k in (keys.pending, *keys.claim_keys, keys.invalid, keys.retry)}
    assert len(slots) == 1


def test_cluster_quota_holders_share_the_count_slot() -> None:
    quota = Keyspace(cluster=True).quota("team", "premium")
    assert quota.count == "quota:team:premium"
    assert key_slot(quota.holders) == key_slot(quota.count)


def test_same_slot_is_always_true_standalone() -> None:
    assert Keyspace().same_slot("a", "b", "c")
    assert not Keyspace(cluster=True).same_slot("a", "b")
    assert Keyspace(cluster=True).same_slot("{a}x", "a")
