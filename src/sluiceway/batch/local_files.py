"""The file store in a local directory (the default): one file per id, written and read in
chunks on a worker thread, so neither a big upload nor a download blocks the event loop or
sits whole in memory. An upload goes to ``<id>.part`` and is renamed when complete."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from sluiceway.errors import ConfigError

__all__ = ["LocalFileStore", "local_directory"]

CHUNK = 1 << 16


def local_directory(url: str) -> Path:
    """The directory a ``file://`` URL or a plain path names."""
    path = url.removeprefix("file://") if url.startswith("file://") else url
    if not path:
        raise ConfigError("the batch file store needs a directory", field="batch.files_url")
    return Path(path)


def _splice(path: Path, data: bytes, at: int) -> int:
    with path.open("r+b" if path.exists() else "w+b") as out:
        out.seek(at)
        out.write(data)
        out.truncate()
        return out.tell()


class LocalFileStore:
    """A :class:`~sluiceway.batch.base.FileStore` in ``root`` (created when missing)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, file_id: str) -> Path:
        if not file_id or "/" in file_id or file_id.startswith("."):
            raise ValueError(f"bad file id {file_id!r}")
        return self._root / file_id

    async def write(self, file_id: str, chunks: AsyncIterator[bytes]) -> int:
        final = self._path(file_id)
        part = final.with_name(final.name + ".part")
        out: BinaryIO = await asyncio.to_thread(part.open, "wb")
        size = 0
        try:
            async for chunk in chunks:
                await asyncio.to_thread(out.write, chunk)
                size += len(chunk)
        except BaseException:
            out.close()
            part.unlink(missing_ok=True)
            raise
        await asyncio.to_thread(out.close)
        await asyncio.to_thread(os.replace, part, final)
        return size

    async def read(self, file_id: str, *, chunk_size: int = CHUNK) -> AsyncIterator[bytes]:
        path = self._path(file_id)
        source: BinaryIO = await asyncio.to_thread(path.open, "rb")
        try:
            while chunk := await asyncio.to_thread(source.read, chunk_size):
                yield chunk
        finally:
            source.close()

    async def append(self, file_id: str, data: bytes, *, at: int) -> int:
        return await asyncio.to_thread(_splice, self._path(file_id), data, at)

    async def size(self, file_id: str) -> int | None:
        path = self._path(file_id)
        return path.stat().st_size if path.exists() else None

    async def delete(self, file_id: str) -> bool:
        path = self._path(file_id)
        existed = path.exists()
        path.unlink(missing_ok=True)
        return existed
