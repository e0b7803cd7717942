"""KV-cache block pool with a vLLM-style prefix cache.

A finite pool of ``num_blocks`` blocks of ``block_size`` tokens. A full block is identified by
a chained hash (its parent block's hash and its own token ids), so two prompts share cached
blocks exactly as far as their token prefixes agree. Blocks nobody references stay cached in
an LRU free queue and are evicted (their hash forgotten) only when the pool needs them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["BlockPool", "chain_hashes"]

_ROOT_HASH = 0x5EED


def chain_hashes(tokens: Sequence[int], block_size: int, parent: int | None = None) -> list[int]:
    """Hashes of every full block of ``tokens``, each chained to the previous block's hash."""
    hashes: list[int] = []
    prev = _ROOT_HASH if parent is None else parent
    for start in range(0, len(tokens) - block_size + 1, block_size):
        prev = hash((prev, tuple(tokens[start : start + block_size])))
        hashes.append(prev)
    return hashes


class BlockPool:
    """Reference-counted blocks, an LRU queue of free ones and a hash -> block cache."""

    def __init__(self, num_blocks: int, block_size: int, *, prefix_caching: bool = True) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self._refs = [0] * num_blocks
        self._hash_of: list[int | None] = [None] * num_blocks
        self._cached: dict[int, int] = {}
        # Free blocks, least recently released first; cached ones keep their hash until reused.
        self._free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(num_blocks))

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def usage(self) -> float:
        """Fraction of blocks referenced by a running request, in [0, 1]."""
        return 1.0 - len(self._free) / self.num_blocks

    def blocks_for(self, num_tokens: int) -> int:
        """How many blocks ``num_tokens`` tokens occupy."""
        return -(-num_tokens // self.block_size)

    def lookup(self, hashes: Sequence[int]) -> list[int]:
        """Cached blocks matching the longest prefix of ``hashes`` (not yet referenced)."""
        if not self.prefix_caching:
            return []
        hits: list[int] = []
        for h in hashes:
            block = self._cached.get(h)
            if block is None:
                break
            hits.append(block)
        return hits

    def can_take(self, hits: Sequence[int], new_blocks: int) -> bool:
        """Whether ``hits`` can be referenced and ``new_blocks`` allocated together."""
        idle_hits = sum(1 for b in hits if self._refs[b] == 0)
        return new_blocks <= len(self._free) - idle_hits

    def take_cached(self, hits: Sequence[int]) -> None:
        """Reference cached blocks (removing idle ones from the free queue)."""
        for block in hits:
            if self._refs[block] == 0:
                del self._free[block]
            self._refs[block] += 1

    def allocate(self, count: int) -> list[int] | None:
        """``count`` fresh blocks, evicting the least recently used cached ones; None if short."""
        if count > len(self._free):
            return None
        blocks: list[int] = []
        for _ in range(count):
            block, _ = self._free.popitem(last=False)
            old = self._hash_of[block]
            if old is not None:
                self._hash_of[block] = None
                if self._cached.get(old) == block:
                    del self._cached[old]
            self._refs[block] = 1
            blocks.append(block)
        return blocks

    def release(self, blocks: Sequence[int]) -> None:
        """Drop one reference per block; tail blocks go to the front of the eviction order."""
        for block in reversed(blocks):
            self._refs[block] -= 1
            if self._refs[block] == 0:
                self._free[block] = None

    def register(self, block: int, block_hash: int) -> None:
        """Make a full block findable by its chained hash (first holder of a hash wins)."""
        if self.prefix_caching and block_hash not in self._cached:
            self._cached[block_hash] = block
            self._hash_of[block] = block_hash
