"""The guide's values files become runtime settings and a processor with real gates."""

from __future__ import annotations

from pathlib import Path

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import VirtualClock
from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.gates.quota import QuotaGate
from sluiceway.processor.build import runtime_settings
from sluiceway.processor.service import Processor

GUIDE = Path(__file__).parents[2] / "fixtures" / "guide"


def test_quota_only_values_map_onto_the_runtime() -> None:
    loaded = load_processor_settings(config_file=GUIDE / "values-redis-quota-only.yaml", env={})
    settings = runtime_settings(loaded.value)
    assert [q.queue_name for q in settings.queues] == [
        "team-premium",
        "team-standard",
        "team-batch",
    ]
    premium = settings.queues[0]
    assert premium.labels == {"tier": "interactive"} and premium.pool_id == "teams"
    assert premium.result_ttl_seconds == 3600.0 and premium.retry.max_connect_errors is None
    assert premium.retry.connect_backoff_cap == 10.0
    assert settings.pool("teams").workers == 16
    assert settings.merge.ordering == "tier-priority" and settings.merge.headers.stamp_lanes
    assert settings.merge.headers.fairness_attribute == "team"
    assert settings.poll_interval == 0.5 and settings.result_queue_name == "results-list"


def test_the_guide_processor_builds_its_quota_gates() -> None:
    loaded = load_processor_settings(config_file=GUIDE / "values-redis-quota-only.yaml", env={})
    proc = Processor(runtime_settings(loaded.value), MemoryBroker(), clock=VirtualClock())
    assert len(proc.ingests) == 3 and set(proc.pools) == {"teams", "default"}
    assert all(isinstance(gate, QuotaGate) for gate in proc.queue_gates())
    assert [g.rule.limit for g in proc.queue_gates()] == [2, 2, 1]  # type: ignore[attr-defined]


def test_an_empty_request_path_means_upstreams_default() -> None:
    import json

    queues = [{"queue_name": "q", "igw_base_url": "http://gw", "request_path_url": ""}]
    loaded = load_processor_settings(
        transport="memory", transport_config=json.dumps({"queues": queues}), env={}
    )
    assert runtime_settings(loaded.value).queues[0].request_path == "/v1/completions"


def test_resume_on_a_queue_reaches_its_runtime_settings() -> None:
    import json

    config = {"queues": [{"queue_name": "q", "igw_base_url": "http://gw", "resume": True}]}
    loaded = load_processor_settings(
        transport="memory", transport_config=json.dumps(config), env={}
    )
    assert runtime_settings(loaded.value).queues[0].resume is True
