"""Named simulator profiles: ready-made capacity and latency settings (durations in seconds).

``guide-pool`` is the multi-tenant guide's reference pool: 10 slots, and a 128-token completion
takes about 2 s with all 10 slots busy (TTFT 0.05 x 1.5 + 127 x 0.010 x 1.5 = 1.98 s).
``h100-8b`` follows llm-d-inference-sim's "8B on H100, balanced, per-token" profile: 16 slots,
ITL 12 ms, prefill overhead 30 ms + 250 us per uncached prompt token, twice as slow when full.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

__all__ = ["PROFILES"]

_GUIDE_POOL: Final[dict[str, Any]] = {
    "max_num_seqs": 10,
    "max_model_len": 4096,
    "block_size": 16,
    "num_gpu_blocks": 4096,
    "time_to_first_token": 0.05,
    "inter_token_latency": 0.010,
    "time_factor_under_load": 1.5,
}

_H100_8B: Final[dict[str, Any]] = {
    "max_num_seqs": 16,
    "max_model_len": 8192,
    "block_size": 16,
    "num_gpu_blocks": 28_000,
    "time_to_first_token": 0.0,
    "prefill_overhead": 0.030,
    "prefill_time_per_token": 0.000_250,
    "inter_token_latency": 0.012,
    "time_factor_under_load": 2.0,
}

PROFILES: Final = MappingProxyType(
    {
        "default": MappingProxyType({}),
        "guide-pool": MappingProxyType(_GUIDE_POOL),
        "h100-8b": MappingProxyType(_H100_8B),
    }
)
