"""One aiohttp client session shared by the sources of a process, opened on first use."""

from __future__ import annotations

import aiohttp

__all__ = ["SharedSession"]


class SharedSession:
    """A lazily opened :class:`aiohttp.ClientSession` (it must be made inside a running loop)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def get(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
