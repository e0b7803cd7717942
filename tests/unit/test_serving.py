"""Serving helper: sockets bound for every sluiceway server."""

from __future__ import annotations

import socket

from sluiceway.serving import bind


def test_listening_sockets_disable_nagle_so_accepted_connections_do() -> None:
    # Without TCP_NODELAY a response written in two parts waits for the client's delayed ACK
    # (about 40 ms per keep-alive request on the default asyncio loop).
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert sock.getsockname()[1] > 0
    finally:
        sock.close()
