"""The SSE writer: one chunk per wake-up, the end reported, a gone peer noticed."""

from __future__ import annotations

import asyncio

from sluiceway.clock import VirtualClock
from sluiceway.sim import Engine, SimConfig, SimRequest
from sluiceway.sim.engine_driver import TokenStream
from sluiceway.sim.openai_response import AnswerFormat, ChunkFormat
from sluiceway.sim.sse import SseWriter


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0


def _writer() -> tuple[Engine, TokenStream, _Transport, asyncio.Future[bool], SseWriter]:
    engine = Engine(SimConfig(time_to_first_token=0.1, inter_token_latency=0.1))
    engine.submit(SimRequest("a", (1, 2), 2), 0.0)
    seq = engine.sequence("a")
    assert seq is not None
    stream = TokenStream(seq, engine.stats, VirtualClock(start=0.0))
    transport = _Transport()
    finished: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    answer = AnswerFormat(ChunkFormat("completion", "id", 0, "sim-model"))
    writer = SseWriter(stream, transport, answer, finished)  # type: ignore[arg-type]
    return engine, stream, transport, finished, writer


async def test_each_token_is_one_http_chunk_and_the_end_is_reported() -> None:
    engine, _, transport, finished, writer = _writer()
    engine.step(0.1)
    writer()
    engine.step(0.2)
    writer()
    assert len(transport.writes) == 2
    size, _, rest = transport.writes[1].partition(b"\r\n")
    assert int(size, 16) == len(rest) - 2 and b'"finish_reason":"length"' in rest
    assert finished.done() and finished.result() is True
    assert engine.stats.e2e.count == 1


async def test_a_closing_transport_ends_the_stream_as_gone() -> None:
    engine, _, transport, finished, writer = _writer()
    transport.closing = True
    engine.step(0.1)
    writer()
    assert transport.writes == [] and finished.result() is False
