"""load_processor_settings: values file, flags on top, cross-document checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.config import load_processor_settings
from sluiceway.errors import ConfigError, UnsupportedError

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"
QUEUE = {"queue_name": "q", "igw_base_url": "http://r"}


def _json(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_guide_values_load() -> None:
    loaded = load_processor_settings(
        config_file=GUIDE / "values-redis-quota-only.yaml", env={"REDIS_URL": "redis://env:1"}
    )
    settings = loaded.value
    assert settings.transport == "redis-sortedset"
    assert settings.transport_config.url == "redis://env:1"
    assert settings.transport_config.poll_interval_ms == 500
    assert [q.id for q in settings.transport_config.queues] == [
        "team-premium",
        "team-standard",
        "team-batch",
    ]
    assert settings.pool("teams").workers == 16
    assert settings.merge_policy.parameters.fairness_attribute == "team"


def test_url_secret_used_without_env() -> None:
    settings = load_processor_settings(
        config_file=GUIDE / "values-redis-quota-only.yaml", env={}
    ).value
    assert settings.transport_config.url == "redis://redis:6379"


def test_url_secret_stays_an_alias_of_the_processor_redis_when_env_overrides() -> None:
    settings = load_processor_settings(
        config_file=GUIDE / "values-redis-quota-only.yaml", env={"REDIS_URL": "redis://env:1"}
    ).value
    assert settings.transport_config.url == "redis://env:1"
    assert settings.url_aliases == ("redis://redis:6379",)


def test_no_alias_without_a_values_file(tmp_path: Path) -> None:
    settings = load_processor_settings(
        transport_config_file=_json(tmp_path, "t.json", {"queues": [QUEUE]}), env={}
    ).value
    assert settings.url_aliases == ()


def test_flags_override_values(tmp_path: Path) -> None:
    pools = _json(tmp_path, "pools.json", [{"id": "teams", "workers": 3}])
    settings = load_processor_settings(
        config_file=GUIDE / "values-redis-quota-only.yaml",
        pool_config_file=pools,
        overrides={"concurrency": 8, "request_timeout": 30.0},
        env={},
    ).value
    assert settings.pool("teams").workers == 3
    assert settings.pool("default").workers == 8
    assert settings.request_timeout == 30.0


def test_flags_alone(tmp_path: Path) -> None:
    settings = load_processor_settings(
        transport="memory",
        transport_config=json.dumps({"queues": [QUEUE]}),
        env={},
    ).value
    assert settings.transport == "memory"
    assert [p.id for p in settings.pools] == ["default"]
    assert settings.concurrency == 64 and settings.gate_wait_timeout == 300.0


def test_queue_pool_must_exist() -> None:
    config = json.dumps({"queues": [{**QUEUE, "worker_pool_id": "gpu"}]})
    with pytest.raises(ConfigError) as info:
        load_processor_settings(transport_config=config, env={})
    assert info.value.field == "queues[0].worker_pool_id"


def test_prometheus_gates_need_a_url(tmp_path: Path) -> None:
    gate = {"gate_type": "prometheus-query", "gate_params": {"query": "1"}}
    pools = _json(
        tmp_path, "p.json", [{"id": "default", "workers": 2, "gate_type": "wait-on-refuse",
                              "gate_params": {"gate": gate}}]
    )  # fmt: skip
    with pytest.raises(ConfigError) as info:
        load_processor_settings(pool_config_file=pools, env={})
    assert info.value.field == "--prometheus-url"
    load_processor_settings(
        pool_config_file=pools, overrides={"prometheus_url": "http://prom:9090"}, env={}
    )


def test_values_file_without_prometheus_url_names_its_key(tmp_path: Path) -> None:
    text = (GUIDE / "values-redis-saturation-prometheus.yaml").read_text()
    path = tmp_path / "values.yaml"
    path.write_text(text.replace("  prometheusURL: PROM_URL\n", ""))
    with pytest.raises(ConfigError) as info:
        load_processor_settings(config_file=path, env={})
    assert info.value.field == "ap.prometheusURL"


def test_watch_interval_needs_a_file() -> None:
    with pytest.raises(ConfigError) as info:
        load_processor_settings(
            transport_config="{}", overrides={"transport_config_watch_interval": 5.0}, env={}
        )
    assert info.value.field == "transport_config_watch_interval"


def test_both_transport_config_sources_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not both"):
        load_processor_settings(
            transport_config="{}", transport_config_file=_json(tmp_path, "t.json", {}), env={}
        )


@pytest.mark.parametrize(
    ("patch", "error", "field"),
    [
        ("  transformConfig: {requestTransforms: []}\n", UnsupportedError, "ap.transformConfig"),
        ("  metrics: {secure: true}\n", UnsupportedError, "ap.metrics.secure"),
        ("  colour: red\n", ConfigError, "ap.colour"),
    ],
)
def test_values_strictness(
    tmp_path: Path, patch: str, error: type[ConfigError], field: str
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("ap:\n  transport: memory\n" + patch)
    with pytest.raises(error) as info:
        load_processor_settings(config_file=path, env={})
    assert info.value.field == field


def test_unknown_override_rejected() -> None:
    with pytest.raises(ConfigError):
        load_processor_settings(transport="memory", overrides={"speed": 1}, env={})


def test_values_ports(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("ap:\n  transport: memory\n  metrics: {port: 0}\n  health: {port: 0}\n")
    settings = load_processor_settings(config_file=path, env={}).value
    assert (settings.metrics_port, settings.health_port) == (0, 0)
