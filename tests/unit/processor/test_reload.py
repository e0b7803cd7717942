"""Hot reload: the plan (pure) and reading a changed transport file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sluiceway.config.processor import load_transport_config
from sluiceway.errors import ConfigError
from sluiceway.processor.reload import plan_reload, reload_once
from sluiceway.processor.specs import QueueSpec

A = QueueSpec(id="a", queue_name="a", igw_base_url="http://gw")
B = QueueSpec(id="b", queue_name="b", igw_base_url="http://gw")


def test_plan_keeps_unchanged_replaces_changed_adds_new_removes_gone() -> None:
    changed_a = replace(A, labels={"tier": "batch"})
    plan = plan_reload([A, B], [changed_a, QueueSpec(id="c", queue_name="c", igw_base_url="x")])
    assert plan.keep == () and set(plan.remove) == {"a", "b"}
    assert [q.id for q in plan.add] == ["a", "c"]
    same = plan_reload([A, B], [A, B])
    assert same.keep == ("a", "b") and not same.changes


def config(url: str, queues: list[str], **extra: object) -> dict[str, object]:
    return {
        "url": url,
        **extra,
        "queues": [{"queue_name": q, "igw_base_url": "http://gw"} for q in queues],
    }


def test_reload_reads_queue_changes_only(tmp_path: Path) -> None:
    path = tmp_path / "transport.json"
    running = load_transport_config(config("redis://r:6379", ["a"]), "redis-sortedset").value
    path.write_text(json.dumps(config("redis://r:6379", ["a"])))
    assert reload_once(path, running) is None
    path.write_text(json.dumps(config("redis://r:6379", ["a", "b"])))
    wanted = reload_once(path, running)
    assert wanted is not None and [q.queue_name for q in wanted.queues] == ["a", "b"]
    path.write_text(json.dumps(config("redis://other:6379", ["a"])))
    with pytest.raises(ConfigError):
        reload_once(path, running)
    path.write_text("{not json")
    with pytest.raises(ConfigError):
        reload_once(path, running)


async def test_watcher_applies_queue_changes_and_keeps_running_on_errors(tmp_path: Path) -> None:
    import asyncio

    from sluiceway.clock import VirtualClock
    from sluiceway.config.processor import TransportConfig
    from sluiceway.processor.reload import watch_transport_config

    path = tmp_path / "transport.json"
    path.write_text(json.dumps(config("redis://r:6379", ["a"])))
    running = load_transport_config(config("redis://r:6379", ["a"]), "redis-sortedset").value
    clock = VirtualClock()
    applied: list[list[str]] = []

    async def apply(wanted: TransportConfig) -> None:
        applied.append([q.queue_name for q in wanted.queues])

    task = asyncio.create_task(
        watch_transport_config(path, running, interval=5, clock=clock, apply=apply)
    )
    await clock.run_until_idle(limit=4)
    path.write_text("{broken")
    await clock.run_until_idle(limit=5)
    path.write_text(json.dumps(config("redis://r:6379", ["a", "b"])))
    await clock.run_until_idle(limit=5)
    await clock.run_until_idle(limit=5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert applied == [["a", "b"]]
