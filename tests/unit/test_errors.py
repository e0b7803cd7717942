"""The error root: every deliberate failure is a ``SluicewayError``; a config error names its
field once, in front of the message."""

from __future__ import annotations

import pytest

from sluiceway.errors import (
    BrokerError,
    ConfigError,
    SluicewayError,
    UnsupportedError,
    WireError,
    hide_secret,
    without_secrets,
)


@pytest.mark.parametrize("kind", [ConfigError, UnsupportedError, BrokerError, WireError])
def test_every_deliberate_error_is_caught_at_the_root(kind: type[SluicewayError]) -> None:
    with pytest.raises(SluicewayError, match="went wrong"):
        raise kind("went wrong")


def test_a_config_error_names_its_field_in_front() -> None:
    error = ConfigError("must be > 0", field="pools.teams.workers")
    assert error.field == "pools.teams.workers"
    assert str(error) == "pools.teams.workers: must be > 0"


def test_a_config_error_without_a_field_is_the_message_alone() -> None:
    error = ConfigError("no passthrough target")
    assert error.field is None
    assert str(error) == "no passthrough target"


def test_an_unsupported_feature_is_reported_as_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        raise UnsupportedError("not implemented by sluiceway", field="flowControl.mode")
    assert caught.value.field == "flowControl.mode"
    assert str(caught.value).startswith("flowControl.mode: ")


def test_no_error_text_shows_a_registered_secret() -> None:
    hide_secret("pa ss/9081")
    error = BrokerError("AUTH failed for redis://u:pa%20ss%2F9081@h with pa+ss%2F9081, pa ss/9081")
    assert "9081" not in str(error) and str(error).count("***") == 3
    hide_secret("ab")  # too short to be a password: words stay whole
    assert without_secrets("about abc") == "about abc"
