"""The llm-d-async Helm values shape (``--config``): the guide's file, the URL secret (and the
environment variable that overrides it: REDIS_URL, DATABASE_URL for postgres), strictness and
ports, as the processor's settings see them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.config import load_processor_settings
from sluiceway.errors import ConfigError, UnsupportedError

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"


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


@pytest.mark.parametrize("transport", ["postgres", None])
def test_database_url_overrides_the_url_secret_for_postgres(
    tmp_path: Path, transport: str | None
) -> None:
    """The guide's values name ``redis:6379``; run on PostgreSQL (``--transport postgres`` or
    ``ap.transport``), DATABASE_URL is the address, as REDIS_URL is for Redis."""
    path = GUIDE / "values-redis-quota-only.yaml"
    text = path.read_text()
    if transport is None:  # the values file itself says postgres
        text = text.replace("transport: redis-sortedset", "transport: postgres", 1)
    env = {"DATABASE_URL": "postgresql://u@db:5432/q", "REDIS_URL": "redis://env:1"}
    values = tmp_path / "values.yaml"
    values.write_text(text)
    loaded = load_processor_settings(config_file=values, transport=transport, env=env)
    assert loaded.value.transport == "postgres"
    assert loaded.value.transport_config.url == "postgresql://u@db:5432/q"
    assert "ap.transportConfig.urlSecret: the URL comes from DATABASE_URL when set" in (
        loaded.warnings
    )


def test_without_database_url_postgres_takes_the_url_secret_and_redis_url_does_not_count() -> None:
    settings = load_processor_settings(
        config_file=GUIDE / "values-redis-quota-only.yaml",
        transport="postgres",
        env={"REDIS_URL": "redis://env:1"},
    ).value
    assert settings.transport_config.url == "redis://redis:6379"  # as the values file says


def test_database_url_does_not_override_a_redis_url_secret() -> None:
    settings = load_processor_settings(
        config_file=GUIDE / "values-redis-quota-only.yaml",
        env={"DATABASE_URL": "postgresql://u@db:5432/q"},
    ).value
    assert settings.transport_config.url == "redis://redis:6379"


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


def test_values_ports(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("ap:\n  transport: memory\n  metrics: {port: 0}\n  health: {port: 0}\n")
    settings = load_processor_settings(config_file=path, env={}).value
    assert (settings.metrics_port, settings.health_port) == (0, 0)
