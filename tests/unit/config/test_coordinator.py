"""The coordinator file: the guide's whole file, a bare parameter block, strictness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sluiceway.config import load_coordinator_config, read_document
from sluiceway.errors import ConfigError, UnsupportedError

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"


def test_guide_file() -> None:
    loaded = load_coordinator_config(read_document(GUIDE / "coordinator-config.yaml"))
    config = loaded.value
    broker = config.broker
    assert config.upstream_url == "http://llm-d-router-epp:80"
    assert config.server.write_timeout == 600.0
    assert broker.quota.limits == {"premium": 2, "standard": 2, "batch": 1}
    assert broker.timeouts.wait_seconds() == (300.0, 600.0)
    assert broker.objectives["async"].overflow == "overflow-async"
    assert [r.tenant for r in broker.routes] == ["realtime", "premium", "standard", "batch"]
    assert any("'decode' is accepted and ignored" in w for w in loaded.warnings)


def test_bare_parameter_block_and_defaults() -> None:
    config = load_coordinator_config({"redis_url": "redis://r", "upstream_url": "http://u"}).value
    broker = config.broker
    assert config.upstream_url == "http://u"
    assert (broker.mode_header, broker.tenant_header) == ("x-llm-d-async-mode", "x-llm-d-tenant")
    assert broker.timeouts.wait_seconds() == (60.0, 3600.0)
    assert broker.timeouts.enqueue_seconds() == (3600.0, None)
    assert broker.forward_headers == ["x-llm-d-slo-ttft-ms", "x-llm-d-slo-tpot-ms"]


def _whole(params: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"pipeline": {"steps": [{"name": "async-broker", "params": params}]}, **top}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (_whole({"redis_url": "redis://r", "colour": 1}), "pipeline.steps[0].params.colour"),
        (_whole({}), "pipeline.steps[0].params.redis_url"),
        (
            _whole({"redis_url": "redis://r", "wakeup_mode": "psychic"}),
            "pipeline.steps[0].params.wakeup_mode",
        ),
        (
            _whole({"redis_url": "redis://r", "forward_headers": ["X-LLM-D-Async-Mode"]}),
            "pipeline.steps[0].params.forward_headers",
        ),
        ({"pipeline": {"steps": [{"name": "decode"}]}}, "pipeline.steps[0]"),
        (_whole({"redis_url": "redis://r"}, server={"colour": 1}), "server.colour"),
    ],
)
def test_errors_name_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_coordinator_config(doc)
    assert info.value.field == field


def test_tls_serving_is_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        load_coordinator_config(_whole({"redis_url": "redis://r"}, server={"secure_serving": True}))


@pytest.mark.parametrize("url", ["foo", "redis:6379", "http://redis:6379", "unix:///tmp/r.sock"])
def test_a_redis_url_naming_no_broker_is_an_error_naming_it(url: str) -> None:
    with pytest.raises(ConfigError, match="names no broker") as info:
        load_coordinator_config({"redis_url": url})
    assert info.value.field == "pipeline.steps[0].params.redis_url"


@pytest.mark.parametrize(
    "url", ["redis://r:6379/0", "rediss://r", "memory://", "sqlite:///q.db", "postgresql://pg/db"]
)
def test_every_broker_scheme_loads(url: str) -> None:
    assert load_coordinator_config({"redis_url": url}).value.broker.redis_url == url


def test_a_negative_quota_limit_is_an_error_naming_the_tenant() -> None:
    doc = {"redis_url": "redis://r", "quota": {"limits": {"batch": -1}}}
    with pytest.raises(ConfigError) as info:
        load_coordinator_config(doc)
    assert info.value.field == "pipeline.steps[0].params.quota.limits.batch"
    assert load_coordinator_config({**doc, "quota": {"limits": {"batch": 0}}}).value


def test_a_managed_redis_is_named_by_its_url_alone() -> None:
    url = "rediss+sentinel://:pw-123@s1,s2,s3/mymaster/0?sentinel_password=spw-456"
    assert load_coordinator_config({"redis_url": url}).value.broker.redis_url == url
    with pytest.raises(ConfigError) as err:
        load_coordinator_config({"redis_url": "redis://:pw-123@h/0?ssl_ca_certs=/ca.crt"})
    assert err.value.field == "pipeline.steps[0].params.redis_url"
    assert "needs a rediss://" in str(err.value) and "pw-123" not in str(err.value)
