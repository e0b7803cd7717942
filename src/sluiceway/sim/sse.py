"""Writing a request's SSE events straight from the engine step to the socket.

Called synchronously by ``TokenStream.notify`` inside the step, so one token costs one
``transport.write`` instead of a task wake-up and an awaited write. The response is already
prepared (headers sent, chunked transfer encoding on), so each write is framed as one chunk.
When the peer has gone the writer reports it and the handler aborts the request.
"""

from __future__ import annotations

import asyncio

from sluiceway.sim.engine_driver import TokenStream
from sluiceway.sim.openai_response import AnswerFormat

__all__ = ["SseWriter"]

# Past this many unsent bytes the client is not reading; treat it as gone.
_MAX_BUFFERED = 4 * 1024 * 1024


class SseWriter:
    """Listener that turns new tokens of ``stream`` into SSE events on ``transport``."""

    def __init__(
        self,
        stream: TokenStream,
        transport: asyncio.Transport,
        answer: AnswerFormat,
        finished: asyncio.Future[bool],
    ) -> None:
        self._stream = stream
        self._transport = transport
        self._answer = answer
        # True: generation complete; False: the peer went away or the server aborted it.
        self._finished = finished

    def __call__(self) -> None:
        finished = self._finished
        if finished.done():
            return
        transport = self._transport
        if transport.is_closing() or transport.get_write_buffer_size() > _MAX_BUFFERED:
            finished.set_result(False)
            return
        stream = self._stream
        start = stream.sent
        tokens = stream.take()
        seq = stream.seq
        done = seq.finished
        if tokens:
            data = self._answer.events(start, tokens, seq.finish_reason if done else None)
            transport.write(b"%x\r\n%s\r\n" % (len(data), data))
        stream.delivered(len(tokens))
        if done:
            finished.set_result(seq.finish_reason != "abort")
