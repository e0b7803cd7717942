"""The memory job store passes the job-store conformance."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from jobstore_conformance import ALL, job

from sluiceway.batch.base import JobStore
from sluiceway.batch.memory_jobs import MemoryJobStore, page_after


@pytest.mark.parametrize("check", ALL, ids=lambda c: c.__name__)
async def test_conformance(check: Callable[[JobStore], Awaitable[None]]) -> None:
    await check(MemoryJobStore())


def test_a_page_after_an_unknown_id_is_empty() -> None:
    jobs = [job("batch_1"), job("batch_2")]
    assert page_after(jobs, "batch_9", 5).jobs == []
    assert page_after(jobs, None, 1).has_more
