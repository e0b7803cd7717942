"""A cascade answers from its first source with a usable sample and logs only switches."""

from __future__ import annotations

import logging

import pytest

from sluiceway.signals.cascade import CascadeSource

from .fakes import SetSource


async def test_first_usable_source_wins(caplog: pytest.LogCaptureFixture) -> None:
    first, second = SetSource(key="a"), SetSource(0.7, key="b")
    cascade = CascadeSource([first, second], name="budget p")
    caplog.set_level(logging.INFO)
    assert (await cascade.read()).value == 0.7 and cascade.winner == 1
    assert (await cascade.read()).value == 0.7
    first.value = 0.2
    assert (await cascade.read()).value == 0.2 and cascade.winner == 0
    assert len([r for r in caplog.records if "answers" in r.message]) == 2
    assert cascade.key == "cascade [a | b]"


async def test_all_blind_is_an_error_naming_each() -> None:
    cascade = CascadeSource([SetSource(error="timeout"), SetSource()])
    reading = await cascade.read()
    assert reading.error == "[0] timeout; [1] no sample" and cascade.winner is None


def test_empty_cascade_is_refused() -> None:
    with pytest.raises(ValueError):
        CascadeSource([])
