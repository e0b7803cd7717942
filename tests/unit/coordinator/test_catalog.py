"""The gateway's model list refuses queued requests for models nobody serves, and refuses
nothing when it cannot be read."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.catalog import ModelCatalog, listed_models
from sluiceway.coordinator.forwarding import ForwardedReply, ForwardFailed


def models_body(*ids: str) -> bytes:
    return json.dumps(
        {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}
    ).encode()


@dataclass
class _Reply:
    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)

    async def chunks(self) -> AsyncIterator[bytes]:
        yield self.body

    async def aclose(self) -> None:
        return None


@dataclass
class Gateway:
    """A forwarder whose ``GET /v1/models`` answers ``status`` and ``body`` (or fails)."""

    status: int = 200
    body: bytes = field(default_factory=lambda: models_body("sim-model"))
    down: bool = False
    reads: int = 0

    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> ForwardedReply:
        assert (method, target) == ("GET", "/v1/models")
        self.reads += 1
        if self.down:
            raise ForwardFailed("upstream unreachable")
        return _Reply(self.status, self.body)

    async def aclose(self) -> None:
        return None


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_listed_models_reads_the_openai_list() -> None:
    assert listed_models(models_body("a", "b")) == {"a", "b"}
    for bad in (b"not json", b"[]", b'{"data": {}}', models_body()):
        assert listed_models(bad) is None


async def test_a_listed_model_passes_and_another_is_404() -> None:
    catalog = ModelCatalog(Gateway())
    await catalog.check("sim-model")
    with pytest.raises(RequestRejected) as err:
        await catalog.check("gpt-unknown")
    assert (err.value.status, err.value.code) == (404, "model_not_found")


async def test_the_list_is_kept_for_the_ttl_and_reread_for_a_missing_model() -> None:
    gateway, now = Gateway(), Clock()
    catalog = ModelCatalog(gateway, ttl=30.0, recheck=1.0, now=now)
    await catalog.check("sim-model")
    await catalog.check("sim-model")
    assert gateway.reads == 1
    gateway.body = models_body("sim-model", "new-model")
    now.t = 0.5  # too soon to look again: the new model is not known yet
    with pytest.raises(RequestRejected):
        await catalog.check("new-model")
    now.t = 1.5  # a missing model earns a fresh look
    await catalog.check("new-model")
    assert gateway.reads == 2
    now.t = 40.0
    await catalog.check("sim-model")
    assert gateway.reads == 3


@pytest.mark.parametrize(
    "gateway",
    [Gateway(down=True), Gateway(status=503), Gateway(body=b"<html>"), Gateway(body=models_body())],
    ids=["down", "503", "not-json", "empty-list"],
)
async def test_an_unreadable_list_refuses_nothing_and_warns_once(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    now = Clock()
    catalog = ModelCatalog(gateway, now=now)
    with caplog.at_level(logging.WARNING, logger="sluiceway.coordinator.catalog"):
        await catalog.check("anything")
        now.t = 100.0
        await catalog.check("anything-else")
    assert gateway.reads == 2
    assert len(caplog.records) == 1
    assert "cannot read the gateway's models" in caplog.records[0].getMessage()
