"""A source whose answer the test sets, counting its reads."""

from __future__ import annotations

from sluiceway.signals.base import Reading, Sample


class SetSource:
    def __init__(self, value: float | None = None, *, key: str = "set", error: str = "") -> None:
        self.value = value
        self.error = error
        self.reads = 0
        self._key = key
        self.closed = False

    @property
    def key(self) -> str:
        return self._key

    async def read(self) -> Reading:
        self.reads += 1
        if self.error:
            return Reading(error=self.error)
        return Reading(() if self.value is None else (Sample(self.value),))

    async def aclose(self) -> None:
        self.closed = True
