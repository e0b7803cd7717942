"""Block pool and prefix cache: chained hashes, partial hits, LRU eviction."""

from __future__ import annotations

from sluiceway.sim.kvcache import BlockPool, chain_hashes


def test_chained_hashes_share_exactly_the_common_full_block_prefix() -> None:
    a = chain_hashes(list(range(12)), 4)
    b = chain_hashes([*range(8), 99, 9, 10, 11], 4)
    assert len(a) == 3 and a[:2] == b[:2] and a[2] != b[2]
    # Same block contents after a different parent hash differently (chaining).
    assert chain_hashes([0, 1, 2, 3], 4)[0] != chain_hashes([9, 9, 9, 9, 0, 1, 2, 3], 4)[1]
    assert chain_hashes([1, 2, 3], 4) == []


def test_lookup_returns_the_longest_cached_prefix() -> None:
    pool = BlockPool(8, 4)
    hashes = chain_hashes(list(range(12)), 4)
    blocks = pool.allocate(3)
    assert blocks is not None
    for block, h in zip(blocks[:2], hashes[:2], strict=True):
        pool.register(block, h)
    assert pool.lookup(hashes) == blocks[:2]
    assert pool.lookup([hashes[2], hashes[0]]) == []  # the walk stops at the first miss


def test_released_blocks_stay_cached_until_evicted_lru_first() -> None:
    pool = BlockPool(4, 4)
    old = chain_hashes(list(range(8)), 4)
    blocks = pool.allocate(2)
    assert blocks is not None
    for block, h in zip(blocks, old, strict=True):
        pool.register(block, h)
    pool.release(blocks)
    assert pool.num_free == 4 and pool.lookup(old) == blocks
    assert pool.can_take(blocks, 2) and not pool.can_take(blocks, 3)
    fresh = pool.allocate(3)  # two never-used blocks, then the released tail block
    assert fresh is not None and blocks[1] in fresh and blocks[0] not in fresh
    assert pool.lookup(old) == [blocks[0]]  # the head block survived


def test_allocation_fails_when_short_and_usage_counts_referenced_blocks() -> None:
    pool = BlockPool(4, 16)
    first = pool.allocate(3)
    assert first is not None and pool.usage == 0.75
    assert pool.allocate(2) is None
    pool.take_cached(first[:1])  # a second holder
    pool.release(first)
    assert pool.usage == 0.25
    pool.release(first[:1])
    assert pool.usage == 0.0


def test_prefix_caching_off_never_hits() -> None:
    pool = BlockPool(4, 4, prefix_caching=False)
    hashes = chain_hashes(list(range(4)), 4)
    [block] = pool.allocate(1) or []
    pool.register(block, hashes[0])
    assert pool.lookup(hashes) == []
