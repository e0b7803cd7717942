"""Parameter field types follow upstream's parsing rules (strings, blanks, nested JSON)."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from sluiceway.config.params import Duration, FlexBool, FlexFloat, FlexInt, JsonObject, Quantity
from sluiceway.config.strict import StrictModel


class Sample(StrictModel):
    threshold: FlexFloat = 0.8
    limit: FlexInt = 1
    window: Duration = 60.0
    on: FlexBool = False
    inner: JsonObject = Field(default_factory=dict)
    size: Quantity = 0


def test_strings_are_numbers() -> None:
    sample = Sample.model_validate(
        {"threshold": "0.5", "limit": "2", "window": "1m", "on": "true", "size": "1k"}
    )
    assert (sample.threshold, sample.limit, sample.window, sample.on) == (0.5, 2, 60.0, True)
    assert sample.size == 1000


def test_blank_means_default() -> None:
    sample = Sample.model_validate({"threshold": "", "limit": " ", "window": ""})
    assert (sample.threshold, sample.limit, sample.window) == (0.8, 1, 60.0)


def test_nested_object_as_json_string() -> None:
    sample = Sample.model_validate({"inner": '{"gate_type": "constant"}'})
    assert sample.inner == {"gate_type": "constant"}


@pytest.mark.parametrize(
    "data",
    [{"limit": "1.5"}, {"limit": 2.5}, {"threshold": "high"}, {"threshold": True}, {"inner": "{"}],
)
def test_rejects(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Sample.model_validate(data)
