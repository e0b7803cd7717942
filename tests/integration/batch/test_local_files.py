"""The local file store: streamed writes (all or nothing), chunked reads, appends that cut a
crash's leftover."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sluiceway.batch.base import lines_of
from sluiceway.batch.local_files import LocalFileStore, local_directory
from sluiceway.errors import ConfigError


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def gather(source: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in source]


async def test_a_write_streams_and_reads_back_in_chunks_and_lines(tmp_path: Path) -> None:
    store = LocalFileStore(tmp_path / "files")
    assert await store.write("file-1", chunks(b"a\nb", b"c\n", b"d")) == 6
    assert b"".join(await gather(store.read("file-1", chunk_size=2))) == b"a\nbc\nd"
    assert len(await gather(store.read("file-1", chunk_size=2))) == 3
    assert await gather(lines_of(store.read("file-1"))) == [b"a\n", b"bc\n", b"d"]
    assert await store.size("file-1") == 6
    assert await store.delete("file-1") and not await store.delete("file-1")
    assert await store.size("file-1") is None


async def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"part"
        raise ValueError("line 2: bad")

    store = LocalFileStore(tmp_path)
    with pytest.raises(ValueError, match="line 2"):
        await store.write("file-2", broken())
    assert await asyncio.to_thread(os.listdir, tmp_path) == []


async def test_an_append_at_the_committed_size_replaces_what_followed(tmp_path: Path) -> None:
    store = LocalFileStore(tmp_path)
    assert await store.append("out", b"one\n", at=0) == 4
    assert await store.append("out", b"lost\n", at=4) == 9  # never committed
    assert await store.append("out", b"two\n", at=4) == 8
    assert (tmp_path / "out").read_bytes() == b"one\ntwo\n"


def test_ids_and_urls_are_checked(tmp_path: Path) -> None:
    assert local_directory("file:///srv/batch") == Path("/srv/batch")
    assert local_directory("rel/dir") == Path("rel/dir")
    with pytest.raises(ConfigError):
        local_directory("file://")
    with pytest.raises(ValueError, match="bad file id"):
        LocalFileStore(tmp_path)._path("../escape")
