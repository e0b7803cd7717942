"""No password reaches an operator's screen: every command's error paths (a broker that cannot
be reached, an address it refuses), for every form an address may take, and the start-up
lines, grepped for a known password."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cli_harness import Child, Ran, sluiceway

from sluiceway.localservices import RedisServer
from sluiceway.ports import free_port

PASSWORD = "Sluice7731pw"
CLOSED = free_port()  # nothing listens there: every connection is refused at once
FORMS = {
    "no-scheme": f"app:{PASSWORD}@127.0.0.1:{CLOSED}/0",
    "userinfo": f"redis://app:{PASSWORD}@127.0.0.1:{CLOSED}/0",
    "query": f"redis://127.0.0.1:{CLOSED}/0?password={PASSWORD}",
    "percent-encoded": f"redis://app:{PASSWORD}%40%2F@127.0.0.1:{CLOSED}/0",
    "sentinel": (
        f"redis+sentinel://:{PASSWORD}@127.0.0.1:{CLOSED}/mymaster/0?sentinel_password={PASSWORD}x"
    ),
    "tls-sentinel": f"rediss+sentinel://u:{PASSWORD}@127.0.0.1:{CLOSED}/m?ssl_cert_reqs=none",
    "unknown-option": f"redis://127.0.0.1:{CLOSED}/0?password={PASSWORD}&colour=red",
}


def _commands(url: str, tmp_path: Path) -> list[tuple[list[str], dict[str, str] | None]]:
    transport = tmp_path / "transport.json"
    queue = {"queue_name": "q", "igw_base_url": "http://127.0.0.1:1"}
    transport.write_text(json.dumps({"url": url, "queues": [queue]}))
    coordinator = tmp_path / "coordinator.yaml"
    coordinator.write_text(f"redis_url: {json.dumps(url)}\nupstream_url: http://127.0.0.1:1\n")
    return [
        (["publish", "a", "--url", url], None),
        (["publish", "a"], {"REDIS_URL": url}),
        (["results", "--result-queue", "r", "--url", url], None),
        (["cancel", "some-id", "--url", url], None),
        (["status", "q", "--url", url], None),
        (["check-config", str(transport)], None),
        (["check-config", str(coordinator)], None),
        (["processor", "--transport-config-file", str(transport), "--port", "0"], None),
        (["coordinator", "--config", str(coordinator), "--port", "0"], None),
    ]


@pytest.mark.serial
@pytest.mark.parametrize("form", sorted(FORMS))
def test_no_error_path_shows_the_password(form: str, tmp_path: Path) -> None:
    commands = _commands(FORMS[form], tmp_path)
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs: list[Ran] = list(pool.map(lambda c: sluiceway(*c[0], env=c[1]), commands))
    for (args, _), ran in zip(commands, runs, strict=True):
        if args[0] != "check-config":  # a valid address passes the check: nothing to hide
            assert ran.code != 0 and ran.err.strip(), (args, ran)  # its error path ran
        assert PASSWORD not in ran.out + ran.err, (args, ran.err)


def test_a_bad_coordinator_scheme_hides_the_password(tmp_path: Path) -> None:
    config = tmp_path / "coordinator.yaml"
    config.write_text(f"redis_url: redi://app:{PASSWORD}@h:6379\nupstream_url: http://x:1\n")
    for ran in (
        sluiceway("check-config", str(config)),
        sluiceway("coordinator", "--config", str(config), "--port", "0"),
    ):
        assert ran.code != 0 and "redi://app:***@h:6379" in ran.err, ran
        assert PASSWORD not in ran.err


@pytest.mark.redis
@pytest.mark.serial
def test_the_start_up_lines_mask_a_password_given_as_an_option(
    redis_factory: type[RedisServer], tmp_path: Path
) -> None:
    server = redis_factory(args=["--requirepass", PASSWORD])  # type: ignore[call-arg]
    url = f"redis://127.0.0.1:{server.port}/0?password={PASSWORD}"
    transport = tmp_path / "transport.json"
    queue = {"queue_name": "q", "igw_base_url": "http://127.0.0.1:1"}
    transport.write_text(json.dumps({"url": url, "queues": [queue]}))
    child = Child(
        tmp_path / "processor.log",
        "processor", "--transport-config-file", str(transport), "--port", "0",
        "--log-level", "debug",
    )  # fmt: skip
    try:
        log = child.wait_for("listening")
    finally:
        child.stop()
    assert "broker: redis-sortedset redis://127.0.0.1" in log and "password=***" in log
    assert PASSWORD not in child.text
