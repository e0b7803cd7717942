"""The batch status machine, its stamps and the OpenAI object the SDK parses."""

from __future__ import annotations

import dataclasses

import pytest
from openai.types import Batch

from sluiceway.batch.status import BatchJob, BatchStatus, IllegalMove, RequestCounts

S = BatchStatus


def job(**changes: object) -> BatchJob:
    base = BatchJob(
        id="batch_1",
        tenant="t",
        input_file_id="file-1",
        endpoint="/v1/completions",
        completion_window="24h",
        created_at=10,
        expires_at=86410,
        queue="q",
        counts=RequestCounts(total=2),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_the_happy_path_stamps_each_move_once() -> None:
    done = job().moved(S.IN_PROGRESS, 11).moved(S.FINALIZING, 20).moved(S.COMPLETED, 21)
    parsed = Batch.model_validate(done.to_openai())
    assert parsed.status == "completed"
    assert (parsed.in_progress_at, parsed.finalizing_at, parsed.completed_at) == (11, 20, 21)
    assert parsed.request_counts is not None and parsed.request_counts.total == 2
    assert parsed.errors is None and parsed.metadata is None


@pytest.mark.parametrize(
    ("start", "to"),
    [
        (S.VALIDATING, S.COMPLETED),
        (S.IN_PROGRESS, S.FAILED),
        (S.COMPLETED, S.CANCELLING),
        (S.CANCELLING, S.EXPIRED),
        (S.CANCELLED, S.CANCELLED),
    ],
)
def test_moves_openai_lacks_are_refused(start: BatchStatus, to: BatchStatus) -> None:
    with pytest.raises(IllegalMove):
        job(status=start).moved(to, 1)


def test_a_cancel_request_shows_as_cancelling_until_the_runner_moves() -> None:
    asked = job(status=S.IN_PROGRESS, cancel_requested_at=15)
    shown = Batch.model_validate(asked.to_openai())
    assert (shown.status, shown.cancelling_at) == ("cancelling", 15)
    finished = job(status=S.COMPLETED, cancel_requested_at=15)
    assert finished.shown_status is S.COMPLETED


def test_a_failed_batch_carries_its_errors() -> None:
    failed = job().failed_with([{"code": "invalid", "line": 3, "message": "m"}], 12)
    parsed = Batch.model_validate(failed.to_openai())
    assert parsed.failed_at == 12
    assert parsed.errors is not None and parsed.errors.data is not None
    assert parsed.errors.data[0].line == 3


def test_json_round_trip_keeps_the_cancel_request_apart() -> None:
    counted = job(counts=RequestCounts(2, 1, 1), metadata={"k": "v"}, cancel_requested_at=3)
    back = BatchJob.from_json(counted.to_json())
    assert back == dataclasses.replace(counted, cancel_requested_at=None)
    assert BatchJob.from_json(counted.to_json(), cancel_requested_at=3) == counted
    assert RequestCounts(2).counted(ok=False).counted(ok=True).finished == 2
