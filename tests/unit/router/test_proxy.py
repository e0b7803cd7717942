"""What the router forwards upstream and how it answers by itself (the relay of upstream answers
runs against real servers in tests/integration/router/test_router_openai.py)."""

from __future__ import annotations

from sluiceway.router.proxy import forward_headers


def test_connection_headers_stay_behind_and_the_rest_is_forwarded() -> None:
    raw = [
        (b"host", b"router:8081"),
        (b"content-length", b"42"),
        (b"connection", b"keep-alive"),
        (b"transfer-encoding", b"chunked"),
        (b"x-llm-d-inference-objective", b"reserved-batch"),
        (b"authorization", b"Bearer k"),
        (b"x-caf\xc3\xa9", b"v\xe9"),  # latin-1 both ways, as ASGI carries them
    ]
    assert forward_headers(raw) == {
        "x-llm-d-inference-objective": "reserved-batch",
        "authorization": "Bearer k",
        "x-caf\u00c3\u00a9": "v\u00e9",
    }
