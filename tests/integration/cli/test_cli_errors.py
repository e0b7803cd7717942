"""Every input mistake a user made on their first day: one ``error:`` line naming the flag or
field, exit 2 (``check-config``: exit 1), no traceback, nothing created."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import assert_one_error, sluiceway


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def _transport(tmp_path: Path, **extra: object) -> Path:
    config = {"queues": [{"queue_name": "q", "igw_base_url": "http://127.0.0.1:1"}], **extra}
    path = tmp_path / "transport.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("flag", ["--port", "--metrics-port", "--health-port"])
def test_processor_port_in_use(tmp_path: Path, busy_port: int, flag: str) -> None:
    config = _transport(tmp_path, path=str(tmp_path / "q.db"))
    other = [] if flag == "--port" else ["--health-port" if flag != "--health-port" else
                                          "--metrics-port", "0"]  # fmt: skip
    ran = sluiceway(
        "processor", "--transport", "sqlite", "--transport-config-file", str(config),
        flag, str(busy_port), *other,
    )  # fmt: skip
    assert_one_error(ran, flag, str(busy_port), "in use")


def test_sim_port_in_use(busy_port: int) -> None:
    assert_one_error(sluiceway("sim", "--port", str(busy_port)), "--port", "in use")


@pytest.mark.parametrize("command", ["processor", "sim"])
def test_port_over_65535(command: str) -> None:
    assert_one_error(sluiceway(command, "--port", "70000"), "--port", "65535")


def test_redis_url_without_a_scheme_is_refused_by_processor_and_check_config(
    tmp_path: Path,
) -> None:
    config = _transport(tmp_path, url="127.0.0.1:6379")
    ran = sluiceway("processor", "--transport-config-file", str(config))
    assert_one_error(ran, "url", "redis://")
    assert_one_error(sluiceway("check-config", str(config)), "url", "redis://", code=1)
    ran = sluiceway("publish", "a", "--url", "127.0.0.1:6379")
    assert_one_error(ran, "--url", "redis://127.0.0.1:6379")


def test_publish_url_with_a_wrong_scheme() -> None:
    assert_one_error(sluiceway("publish", "a", "--url", "http://127.0.0.1:6379"), "--url")


def test_a_non_utf8_config_names_the_file_once(tmp_path: Path) -> None:
    bad = tmp_path / "values.yaml"
    bad.write_bytes(b"ap:\n  concurrency: \xff\xfe\n")
    ran = sluiceway("processor", "--config", str(bad))
    assert_one_error(ran, str(bad), "UTF-8")
    ran = sluiceway("check-config", str(bad))
    assert_one_error(ran, "UTF-8", code=1)
    assert ran.err.count(str(bad)) == 1


def test_json_syntax_errors_are_told_in_json_terms(tmp_path: Path) -> None:
    bad = tmp_path / "transport.json"
    bad.write_text('{"queues": [ {"queue_name": "q",} ]}')
    ran = sluiceway("check-config", str(bad))
    assert_one_error(ran, "invalid JSON at line 1", code=1)
    assert "yaml" not in ran.err.lower() and ran.err.count(str(bad)) == 1


def test_sqlite_refuses_a_url_and_creates_nothing(tmp_path: Path) -> None:
    ran = sluiceway(
        "processor", "--transport", "sqlite", "--transport-config",
        json.dumps({"path": "redis://127.0.0.1:6379/0", "queues": []}), "--port", "0",
        cwd=tmp_path,
    )  # fmt: skip
    assert_one_error(ran, "path", "looks like a URL")
    ran = sluiceway("publish", "a", "--transport", "sqlite", "--url", "redis://x:1/0", cwd=tmp_path)
    assert_one_error(ran, "--url", "looks like a URL")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command", [["results"], ["status", "q"], ["cancel", "some-id"]], ids=lambda c: c[0]
)
def test_read_only_commands_never_create_a_database(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nonexistent.db"
    ran = sluiceway(*command, "--transport", "sqlite", "--url", str(missing))
    assert_one_error(ran, "--url", "no SQLite database")
    assert not missing.exists() and list(tmp_path.iterdir()) == []


def test_check_config_warns_on_unknown_tiers_and_names_undefined_pools(tmp_path: Path) -> None:
    config = tmp_path / "transport.json"
    queue = {"queue_name": "q", "igw_base_url": "http://x:1", "labels": {"tier": "platinum"},
             "worker_pool_id": "gpu"}  # fmt: skip
    config.write_text(json.dumps({"url": "redis://x:6379", "queues": [queue]}))
    ran = sluiceway("check-config", str(config))
    assert ran.code == 0, ran
    assert "queues[0].labels.tier: unknown tier 'platinum'" in ran.err
    assert "queues[0].worker_pool_id: pool 'gpu'" in ran.err


def test_check_config_refuses_an_upstream_without_http(tmp_path: Path) -> None:
    config = tmp_path / "transport.json"
    queue = {"queue_name": "q", "igw_base_url": "127.0.0.1:8000"}
    config.write_text(json.dumps({"url": "redis://x:6379", "queues": [queue]}))
    assert_one_error(sluiceway("check-config", str(config)), "igw_base_url", "http", code=1)


def test_a_values_file_whose_queue_names_a_missing_pool_fails(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        "ap:\n  transportConfig:\n    url: redis://x:6379\n    queues:\n"
        "      - queue_name: q\n        igw_base_url: http://x:1\n        worker_pool_id: gpu\n"
    )
    assert_one_error(sluiceway("check-config", str(values)), "worker_pool_id", "gpu", code=1)


@pytest.mark.parametrize(("flag", "value"), [("--log-level", "loud"), ("--log-format", "xml")])
def test_bad_log_flags(flag: str, value: str) -> None:
    assert_one_error(sluiceway("processor", flag, value), flag)


def test_config_errors_name_their_file_once(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        "ap:\n  transportConfig:\n    url: redis://x:6379\n    queues:\n"
        "      - queue_name: q\n        igw_base_url: router:80\n"
    )
    for ran in (sluiceway("processor", "--config", str(values)),
                sluiceway("check-config", str(values))):  # fmt: skip
        assert_one_error(ran, str(values), "ap.transportConfig.queues[0].igw_base_url",
                         code=ran.code)  # fmt: skip
        assert ran.err.count(str(values)) == 1 and ran.code in (1, 2)
    pools = tmp_path / "pools.json"
    pools.write_text('[{"id": "gpu", "workers": 0}]')
    transport = _transport(tmp_path)
    ran = sluiceway("processor", "--transport-config-file", str(transport),
                    "--pool-config-file", str(pools))  # fmt: skip
    assert_one_error(ran, str(pools), "[0].workers")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64 levels"),
        (
            "redis_url: redis://r:6379\nquota:\n  limits:\n    batch: -1\n",
            "pipeline.steps[0].params.quota.limits.batch",
        ),
        ("redis_url: foo\n", "pipeline.steps[0].params.redis_url"),
    ],
    ids=["5000-deep", "negative-quota-limit", "redis-url-without-broker"],
)
def test_a_bad_coordinator_file_is_one_error_in_check_config_and_at_start(
    tmp_path: Path, text: str, needle: str
) -> None:
    config = tmp_path / "coordinator.yaml"
    config.write_text(text)
    checked = sluiceway("check-config", str(config))
    started = sluiceway("coordinator", "--config", str(config), "--port", "0")
    assert_one_error(checked, str(config), needle, code=1)
    assert_one_error(started, str(config), needle, code=2)
    assert checked.err.count(str(config)) == started.err.count(str(config)) == 1
