"""Patience learned from wait-mode clients that hang up cuts the next envelopes' deadlines,
per tenant, and is exported; other tenants keep their declared timeouts."""

from __future__ import annotations

import asyncio
import json

import aiohttp
from coordinator_rig import Front, running_front
from test_coordinator_modes import MODEL, call, until

from sluiceway.observability.names import COORDINATOR_LEARNED_PATIENCE
from sluiceway.wire import decode_envelope

BODY = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 3}).encode()


def _headers(tenant: str, request_id: str) -> dict[str, str]:
    return {
        "x-llm-d-tenant": tenant,
        "x-llm-d-async-mode": "wait",
        "x-request-id": request_id,
        "x-request-timeout-seconds": "3000",
    }


async def _deadlines(front: Front, queue: str) -> dict[str, float]:
    envelopes = [decode_envelope(e.member) for e in await front.broker.peek(queue, 100)]
    return {e.data.id: float(e.data.deadline) for e in envelopes}


def _wait(front: Front, tenant: str, request_id: str) -> asyncio.Task[object]:
    headers = _headers(tenant, request_id)
    return asyncio.create_task(
        call(front.url, "POST", "/v1/completions", headers=headers, body=BODY)
    )


async def _queued_deadline(front: Front, tenant: str, request_id: str) -> float:
    queue, key = f"team-{tenant}", f"{tenant}:{request_id}"

    async def queued() -> bool:
        return key in await _deadlines(front, queue)

    await until(queued)
    return (await _deadlines(front, queue))[key]


async def _gone(task: asyncio.Task[object]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_clients_that_hang_up_cut_their_tenants_next_deadlines() -> None:
    async with running_front(start_processor=False, patience={"min_samples": 2}) as front:
        book = front.coordinator.patience
        for n in range(2):
            leaver = _wait(front, "batch", f"leaver-{n}")
            await _queued_deadline(front, "batch", f"leaver-{n}")
            await _gone(leaver)

        async def learned() -> bool:
            return book.learned("batch", front.clock.now()) is not None

        await until(learned)
        patience = book.learned("batch", front.clock.now())
        assert patience is not None and patience < 3000
        now = front.clock.now()
        waiting = [_wait(front, "batch", "next"), _wait(front, "premium", "other")]
        cut = await _queued_deadline(front, "batch", "next")
        kept = await _queued_deadline(front, "premium", "other")
        assert cut - now <= patience + 5  # cut to the patience, not the declared 3000 s
        assert kept - now > patience + 100  # another tenant keeps its declared timeout
        for task in waiting:
            await _gone(task)
        async with aiohttp.ClientSession() as http, http.get(front.url + "/metrics") as resp:
            text = await resp.text()
        assert f'{COORDINATOR_LEARNED_PATIENCE}{{tenant="batch"}}' in text
        assert 'tenant="premium"' not in text.split(COORDINATOR_LEARNED_PATIENCE, 1)[1]
