"""The file object the SDK parses, and its stored form."""

from __future__ import annotations

from openai.types import FileObject

from sluiceway.batch.base import FileInfo, FileStore, JobStore
from sluiceway.batch.memory_jobs import MemoryJobStore


def test_a_file_is_an_openai_file_object_and_round_trips() -> None:
    info = FileInfo("file-1", "t", "in.jsonl", "batch", 12, 99, 3, ("/v1/completions",), ("m",))
    parsed = FileObject.model_validate(info.to_openai())
    assert (parsed.id, parsed.bytes, parsed.purpose, parsed.status) == (
        "file-1",
        12,
        "batch",
        "processed",
    )
    assert FileInfo.from_doc(info.to_doc()) == info


def test_the_protocols_are_checkable() -> None:
    assert isinstance(MemoryJobStore(), JobStore)
    assert not isinstance(MemoryJobStore(), FileStore)
