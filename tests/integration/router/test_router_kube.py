"""The Kubernetes objective watch against a fake API server: list, watch from the list's
resourceVersion, ADDED / MODIFIED / DELETED, a relist after 410 Gone, and a back-off that
doubles while the API server fails."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from fake_kube import FakeApiServer, fake_api
from router_harness import until

from sluiceway.clock import VirtualClock
from sluiceway.router.kube import ObjectiveWatch
from sluiceway.router.objectives import ObjectiveTable

pytest.importorskip("kubernetes_asyncio")

PATH = "/apis/llm-d.ai/v1alpha2/inferenceobjectives"


def _obj(name: str, prio: int, pool: str = "p", rv: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "llm-d.ai/v1alpha2",
        "kind": "InferenceObjective",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv), "uid": name},
        "spec": {"priority": prio, "poolRef": {"name": pool}},
        "status": {"conditions": []},
    }


async def test_list_watch_events_and_relist_after_gone() -> None:
    fake = FakeApiServer()
    objectives = fake.add(PATH, "InferenceObjective")
    objectives.items = [_obj("a", 100), _obj("b", -5), _obj("other", 7, pool="q")]
    async with fake_api(fake) as api:
        table = ObjectiveTable()
        watch = ObjectiveWatch(api, table, "p", retry=0.01)
        task = asyncio.create_task(watch.run())
        try:
            await until(lambda: table.names() == {"a": 100, "b": -5})
            await until(lambda: objectives.watch_versions == ["10"])
            objectives.push("ADDED", _obj("c", 30, rv=11))
            objectives.push("MODIFIED", _obj("a", 50, rv=12))
            objectives.push("DELETED", _obj("b", -5, rv=13))
            await until(lambda: table.names() == {"a": 50, "c": 30})
            # The watch ends: it resumes from the last version it saw, without a list.
            objectives.end_watch()
            await until(lambda: objectives.watch_versions == ["10", "13"])
            assert objectives.lists == 1
            # 410 Gone: the router lists again and installs the fresh state.
            objectives.items, objectives.version = [_obj("d", -10, rv=40)], 40
            objectives.gone()
            await until(lambda: table.names() == {"d": -10})
            await until(lambda: objectives.watch_versions[-1] == "40")
            assert objectives.lists == 2
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_errors_back_off_doubling_to_the_cap_then_start_over() -> None:
    """The API server answers 404 (the resource is not installed yet): each relist waits
    twice as long as the one before, up to ``max_retry``; once a list succeeds, the next
    failure waits ``retry`` again."""
    fake = FakeApiServer()
    clock = VirtualClock()
    async with fake_api(fake) as api:
        watch = ObjectiveWatch(api, ObjectiveTable(), "p", retry=1.0, max_retry=4.0, clock=clock)
        task = asyncio.create_task(watch.run())
        try:
            waits = []
            for turn in range(4):
                await until(lambda: clock.next_wakeup() is not None)
                due = clock.next_wakeup()
                assert due is not None
                waits.append(due - clock.now())
                if turn == 3:  # installed before this wait ends: the next list works
                    objectives = fake.add(PATH, "InferenceObjective")
                clock.advance(due - clock.now())
            assert waits == [1.0, 2.0, 4.0, 4.0]
            await until(lambda: objectives.watch_versions == ["10"])
            assert objectives.lists == 1
            del fake.collections[PATH]  # gone again: the next watch call fails with 404
            objectives.end_watch()
            await until(lambda: clock.next_wakeup() is not None)
            assert clock.next_wakeup() == clock.now() + 1.0
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
