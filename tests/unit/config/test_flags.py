"""Leftover upstream processor flags: warning, unsupported error or unknown error."""

from __future__ import annotations

import pytest

from sluiceway.config.flags import check_upstream_flags
from sluiceway.errors import ConfigError, UnsupportedError


def test_log_flags_are_warnings() -> None:
    warnings = check_upstream_flags(["-v", "4", "--zap-devel", "--zap-log-level=debug"])
    assert len(warnings) == 3


def test_metrics_auth_off_is_fine() -> None:
    assert check_upstream_flags(["--metrics-endpoint-auth=false"]) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--metrics-endpoint-auth=true"],
        ["--metrics-endpoint-auth"],
        ["--redis.url", "redis://x"],
        ["--transform-config-file=t.json"],
        ["--message-queue-impl=redis-pubsub"],
    ],
)
def test_unsupported(args: list[str]) -> None:
    with pytest.raises(UnsupportedError) as info:
        check_upstream_flags(args)
    assert info.value.field == args[0].split("=")[0]


def test_unknown_flag() -> None:
    with pytest.raises(ConfigError, match="unknown flag"):
        check_upstream_flags(["--turbo"])
