"""load_processor_settings: flags on top of the values file, defaults, cross-document checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.config import load_processor_settings
from sluiceway.errors import ConfigError

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"
QUEUE = {"queue_name": "q", "igw_base_url": "http://r"}


def _json(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


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


def test_unknown_override_rejected() -> None:
    with pytest.raises(ConfigError):
        load_processor_settings(transport="memory", overrides={"speed": 1}, env={})


def test_the_runtime_defaults_follow_the_declared_ones() -> None:
    from sluiceway.config.processor_settings import default_of
    from sluiceway.processor.specs import ProcessorSpec

    spec = ProcessorSpec(queues=())
    for name in ("request_timeout", "drain_timeout", "gate_wait_timeout"):
        assert getattr(spec, name) == default_of(name)
    settings = load_processor_settings(
        transport_config=json.dumps({"queues": [QUEUE]}), env={}
    ).value
    assert (settings.concurrency, settings.request_timeout) == (
        default_of("concurrency"),
        default_of("request_timeout"),
    )


def test_only_declared_settings_are_accepted() -> None:
    with pytest.raises(ConfigError) as info:
        load_processor_settings(overrides={"no_such_setting": 1}, env={})
    assert info.value.field == "no_such_setting"


def test_the_overload_order_settings_reach_the_runtime_from_values_and_flags(
    tmp_path: Path,
) -> None:
    from sluiceway.processor.build import runtime_settings
    from sluiceway.processor.specs import ProcessorSpec

    spec = ProcessorSpec(queues=())
    assert (spec.overload_sojourn_target, spec.overload_interval) == (5.0, 10.0)
    values = tmp_path / "values.yaml"
    values.write_text("ap:\n  overloadSojournTarget: 2s\n  overloadInterval: 1m\n")
    loaded = load_processor_settings(
        config_file=values, transport="memory", transport_config=json.dumps({"queues": [QUEUE]}),
        overrides={"overload_interval": 0.0}, env={},
    )  # fmt: skip
    runtime = runtime_settings(loaded.value)
    assert (runtime.overload_sojourn_target, runtime.overload_interval) == (2.0, 0.0)
    negative = tmp_path / "negative.yaml"
    negative.write_text("ap:\n  overloadSojournTarget: -1s\n")
    with pytest.raises(ConfigError) as info:
        load_processor_settings(config_file=negative, env={})
    assert info.value.field == "ap.overloadSojournTarget"


def test_the_service_time_quantile_from_values_and_its_bounds(tmp_path: Path) -> None:
    from sluiceway.processor.build import runtime_settings

    values = tmp_path / "values.yaml"
    values.write_text("ap:\n  serviceTimeQuantile: 0.9\n")
    loaded = load_processor_settings(
        config_file=values, transport="memory", transport_config=json.dumps({"queues": [QUEUE]}),
        env={},
    )  # fmt: skip
    assert runtime_settings(loaded.value).service_time_quantile == 0.9
    for bad in ("0", "1.5"):
        wrong = tmp_path / "wrong.yaml"
        wrong.write_text(f"ap:\n  serviceTimeQuantile: {bad}\n")
        with pytest.raises(ConfigError) as info:
            load_processor_settings(config_file=wrong, env={})
        assert info.value.field == "ap.serviceTimeQuantile"
