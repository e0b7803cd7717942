"""Parameter models of the scorer plugin types the router's picker understands.

The picker reads only their weights from ``schedulingProfiles``. ``queue-scorer`` and
``kv-cache-utilization-scorer`` take no parameters; ``prefix-cache-scorer``'s tuning of
upstream's block index (block size, LRU capacity, auto-tune) is accepted and ignored, because
the picker's prefix affinity remembers the last endpoint per prompt prefix instead.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from sluiceway.config.strict import CamelModel

__all__ = ["KvCacheScorerParams", "PrefixCacheScorerParams", "QueueScorerParams"]


class QueueScorerParams(CamelModel):
    """``queue-scorer``: prefers endpoints with fewer waiting requests."""


class KvCacheScorerParams(CamelModel):
    """``kv-cache-utilization-scorer``: prefers endpoints with lower KV-cache use."""


class PrefixCacheScorerParams(CamelModel):
    """``prefix-cache-scorer``: prefers the endpoint that last served the prompt's prefix."""

    COSMETIC: ClassVar[frozenset[str]] = frozenset(
        {
            "autoTune",
            "blockSize",
            "blockSizeTokens",
            "hashBlockSize",
            "maxPrefixBlocksToMatch",
            "lruCapacityPerServer",
        }
    )

    auto_tune: bool | None = None
    block_size: int | None = Field(default=None, gt=0)
    block_size_tokens: int | None = Field(default=None, gt=0)
    hash_block_size: int | None = Field(default=None, gt=0)
    max_prefix_blocks_to_match: int | None = Field(default=None, gt=0)
    lru_capacity_per_server: int | None = Field(default=None, gt=0)
