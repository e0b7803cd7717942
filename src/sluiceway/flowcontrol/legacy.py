"""Flow control off: legacy admission (the ``flowControl`` feature gate is not set).

Sheddable requests (``priority < 0``) are refused with 429 while the pool is saturated
(``saturation >= 1.0``); everything else passes and queues in the model servers. Without a
detector everything passes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LegacyVerdict", "legacy_admit"]

SATURATED_MESSAGE = "system saturated, sheddable request dropped"


@dataclass(frozen=True, slots=True)
class LegacyVerdict:
    """``status`` is None when admitted, else the HTTP status (no dropped-reason header)."""

    admitted: bool
    status: int | None = None
    message: str = ""


def legacy_admit(priority: int, saturation: float | None) -> LegacyVerdict:
    """Admit or refuse one request; ``saturation`` None means no detector is configured."""
    if priority < 0 and saturation is not None and saturation >= 1.0:
        return LegacyVerdict(False, 429, SATURATED_MESSAGE)
    return LegacyVerdict(True)
