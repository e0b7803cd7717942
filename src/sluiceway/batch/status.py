"""A batch's state: its status machine, request counts and the OpenAI ``batch`` object (pure).

Statuses and moves as OpenAI documents them: ``validating`` -> ``in_progress`` ->
``finalizing`` -> ``completed``; ``validating`` -> ``failed``; ``in_progress`` or
``finalizing`` -> ``expired`` at the end of the completion window; any of the three ->
``cancelling`` -> ``cancelled``. Each move stamps its ``<status>_at`` once. A cancel asked
while the batch runs is kept apart (``cancel_requested_at``, written by the cancel route, never
by the runner) and shown as ``cancelling`` until the runner takes the move.

Beside the OpenAI fields the job carries its progress: lines read and queued (``ingested``),
the committed sizes of its output and error files (a restart cuts them back to these).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

__all__ = ["TERMINAL", "BatchJob", "BatchStatus", "IllegalMove", "RequestCounts"]


class BatchStatus(StrEnum):
    VALIDATING = "validating"
    FAILED = "failed"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


S = BatchStatus
TERMINAL: Final = frozenset({S.FAILED, S.COMPLETED, S.EXPIRED, S.CANCELLED})
_MOVES: Final[dict[BatchStatus, frozenset[BatchStatus]]] = {
    S.VALIDATING: frozenset({S.IN_PROGRESS, S.FAILED, S.CANCELLING, S.EXPIRED}),
    S.IN_PROGRESS: frozenset({S.FINALIZING, S.CANCELLING, S.EXPIRED}),
    S.FINALIZING: frozenset({S.COMPLETED, S.CANCELLING, S.EXPIRED}),
    S.CANCELLING: frozenset({S.CANCELLED}),
}
_RUNNING: Final = frozenset({S.VALIDATING, S.IN_PROGRESS, S.FINALIZING})


class IllegalMove(ValueError):
    """A status move OpenAI's machine does not have."""


@dataclass(frozen=True, slots=True)
class RequestCounts:
    """``request_counts``: lines in the batch, those answered 2xx and those that failed."""

    total: int = 0
    completed: int = 0
    failed: int = 0

    @property
    def finished(self) -> int:
        return self.completed + self.failed

    def counted(self, *, ok: bool) -> RequestCounts:
        if ok:
            return dataclasses.replace(self, completed=self.completed + 1)
        return dataclasses.replace(self, failed=self.failed + 1)


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One batch as stored. Times are whole scaled Unix seconds, as OpenAI's."""

    id: str
    tenant: str
    input_file_id: str
    endpoint: str
    completion_window: str
    created_at: int
    expires_at: int
    queue: str
    metadata: dict[str, str] = field(default_factory=dict)
    status: BatchStatus = S.VALIDATING
    stamps: dict[str, int] = field(default_factory=dict)
    counts: RequestCounts = RequestCounts()
    model: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: tuple[dict[str, Any], ...] = ()
    ingested: int = 0
    output_bytes: int = 0
    error_bytes: int = 0
    cancel_requested_at: int | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def shown_status(self) -> BatchStatus:
        """What callers see: a cancel asked of a running batch shows as ``cancelling``."""
        if self.cancel_requested_at is not None and self.status in _RUNNING:
            return S.CANCELLING
        return self.status

    def moved(self, to: BatchStatus, at: int) -> BatchJob:
        """The job in status ``to`` since ``at``; :class:`IllegalMove` for a move OpenAI lacks."""
        if to not in _MOVES.get(self.status, frozenset()):
            raise IllegalMove(f"batch {self.id}: {self.status} -> {to}")
        stamps = {**self.stamps}
        stamps.setdefault(f"{to}_at", at)
        return dataclasses.replace(self, status=to, stamps=stamps)

    def failed_with(self, errors: list[dict[str, Any]], at: int) -> BatchJob:
        return dataclasses.replace(self.moved(S.FAILED, at), errors=tuple(errors))

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``batch`` object (``openai.types.Batch``)."""
        stamps = dict(self.stamps)
        shown = self.shown_status
        if shown is S.CANCELLING and self.cancel_requested_at is not None:
            stamps.setdefault("cancelling_at", self.cancel_requested_at)
        names = ("in_progress", "finalizing", "completed", "failed", "expired")
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "model": self.model,
            "errors": {"object": "list", "data": list(self.errors)} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": str(shown),
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            **{f"{n}_at": stamps.get(f"{n}_at") for n in names},
            "cancelling_at": stamps.get("cancelling_at"),
            "cancelled_at": stamps.get("cancelled_at"),
            "request_counts": dataclasses.asdict(self.counts),
            "metadata": self.metadata or None,
        }

    def to_json(self) -> str:
        doc = dataclasses.asdict(self)
        doc.pop("cancel_requested_at")  # stored apart: the runner never overwrites it
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes, *, cancel_requested_at: int | None = None) -> BatchJob:
        doc = json.loads(text)
        doc["status"] = BatchStatus(doc["status"])
        doc["counts"] = RequestCounts(**doc["counts"])
        doc["errors"] = tuple(doc.get("errors") or ())
        return cls(**doc, cancel_requested_at=cancel_requested_at)
