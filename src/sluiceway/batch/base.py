"""The batch stores' protocols: job state in the broker's database, file bytes in a file store.

Job state (:class:`JobStore`) sits where the queues do, so a batch survives what its requests
survive: Redis, PostgreSQL or SQLite (memory for one process). File bytes
(:class:`FileStore`) sit apart, in a local directory by default: a 200 MB input file has no
place in Redis. Every method takes the tenant where a caller names an object: another
tenant's file or batch is not found.

Idempotent collection rests on :meth:`JobStore.commit_lines`: the lines a result was written
for are added to the batch's done set together with the job (its counts and the committed file
sizes), in one step. This module imports only the standard library and ``batch.status``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from sluiceway.batch.status import BatchJob

__all__ = ["FileInfo", "FileStore", "JobStore", "Page"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """A stored file: OpenAI's ``file`` object plus its owner and what its lines asked for."""

    id: str
    tenant: str
    filename: str
    purpose: str
    bytes: int
    created_at: int
    lines: int = 0
    urls: tuple[str, ...] = ()
    models: tuple[str, ...] = ()

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.bytes,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }

    def to_doc(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> FileInfo:
        return cls(**{**doc, "urls": tuple(doc["urls"]), "models": tuple(doc["models"])})


@dataclass(frozen=True, slots=True)
class Page:
    """One page of batches, newest first, and whether more follow."""

    jobs: list[BatchJob]
    has_more: bool


@runtime_checkable
class JobStore(Protocol):
    """Files' metadata and batches' state, per tenant."""

    async def put_file(self, info: FileInfo) -> None: ...

    async def get_file(self, tenant: str, file_id: str) -> FileInfo | None: ...

    async def list_files(self, tenant: str) -> list[FileInfo]:
        """The tenant's files, newest first."""
        ...

    async def delete_file(self, tenant: str, file_id: str) -> bool: ...

    async def put_batch(self, job: BatchJob) -> None:
        """Create or overwrite the job (its cancel request, stored apart, is kept)."""
        ...

    async def get_batch(self, tenant: str, batch_id: str) -> BatchJob | None: ...

    async def list_batches(self, tenant: str, *, after: str | None, limit: int) -> Page:
        """The tenant's batches newest first, starting after the batch ``after``."""
        ...

    async def active_batches(self) -> list[BatchJob]:
        """Every tenant's batches not yet in a final status (to resume after a restart)."""
        ...

    async def request_cancel(self, tenant: str, batch_id: str, at: int) -> BatchJob | None:
        """Record a cancel request (the first one's time wins); the job, or None if unknown."""
        ...

    async def commit_lines(self, job: BatchJob, numbers: Sequence[int]) -> None:
        """Add ``numbers`` to the job's done set and save ``job``, in one step."""
        ...

    async def done_lines(self, batch_id: str, numbers: Sequence[int]) -> set[int]:
        """Which of ``numbers`` are in the job's done set."""
        ...

    async def take_lease(self, batch_id: str, owner: str, *, until: float, now: float) -> bool:
        """Own the running of a batch until ``until`` (scaled Unix seconds): True when free,
        lapsed or already ``owner``'s, so one coordinator replica runs each batch."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class FileStore(Protocol):
    """File bytes, written and read in chunks (never a whole file in memory)."""

    async def write(self, file_id: str, chunks: AsyncIterator[bytes]) -> int:
        """Store ``chunks`` as ``file_id`` (all or nothing); the size written."""
        ...

    def read(self, file_id: str, *, chunk_size: int = 1 << 16) -> AsyncIterator[bytes]:
        """The file's bytes in chunks."""
        ...

    async def append(self, file_id: str, data: bytes, *, at: int) -> int:
        """Write ``data`` at offset ``at``, cutting whatever followed (a restart's leftover
        past the committed size); the new size."""
        ...

    async def size(self, file_id: str) -> int | None: ...

    async def delete(self, file_id: str) -> bool: ...


async def lines_of(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The lines (newline kept) of a file read in ``chunks``; only one line is held at once."""
    rest = b""
    async for chunk in chunks:
        rest += chunk
        *whole, rest = rest.split(b"\n")
        for line in whole:
            yield line + b"\n"
    if rest:
        yield rest
