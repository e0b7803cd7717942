"""Hostile inputs for the HTTP surfaces, and the checks every answer must pass.

One module for every fuzz test: JSON of the wrong types, numbers no JSON parser should take
(NaN, infinities, integers past 64 bits), nesting past any parser's bound, bytes that are not
UTF-8, headers and paths of odd shapes. Valid request bodies are mutated field by field, so the
inputs reach past the first "not a JSON object" check into each component's own parsing.

An answer passes when it is not a 5xx (bar the ones a test names as the system's real answer),
nothing was logged at ERROR with a traceback, and the server still answers ``/healthz``.
"""

from __future__ import annotations

import json
import logging
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
import pytest
from hypothesis import event
from hypothesis import strategies as st
from yarl import URL

from sluiceway.sim import SimConfig

MODEL: Final = "sim-model"
# The simulator every HTTP surface is fuzzed against: instant, small context.
FAST_SIM: Final = SimConfig(time_to_first_token=0.0, inter_token_latency=0.0, max_model_len=256)
COMPLETION: Final[dict[str, Any]] = {"model": MODEL, "prompt": "hi there", "max_tokens": 2}
CHAT: Final[dict[str, Any]] = {
    "model": MODEL,
    "messages": [{"role": "user", "content": "hi there"}],
    "max_tokens": 2,
}
# The fields the router, the coordinator and the simulator read.
FIELDS: Final = (
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "n",
    "best_of",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "stop",
    "seed",
    "user",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "echo",
    "suffix",
    "priority",
    "ignore_eos",
    "tools",
    "response_format",
)
# Values chosen to sit on the edges: wrong types, bounds, numbers past 64 bits and doubles.
EDGES: Final[tuple[Any, ...]] = (
    None, True, False, 0, -1, 1, 2**31, 2**63, 2**64, 10**30, 10**400, -(10**400), 1e308,
    -0.0, 0.5, float("nan"), float("inf"), float("-inf"), "", " ", MODEL, "sim-model ", "0",
    "NaN", "\u0000", "\ud800", "é" * 3, [], {}, [[]], [""], ["x"], [1, 2], [-1], [2**40],
    [[1, 2]], [{}], [None], {"include_usage": "yes"}, {"include_usage": True},
    [{"role": "user"}], [{"role": "assistant", "content": None}], [{"role": 1, "content": "x"}],
    [{"role": "user", "content": [{"type": "text", "text": {"a": [1]}}]}],
    [{"role": "user", "content": 5}], [{"content": "x"}],
)  # fmt: skip

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text(max_size=20)
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
hostile_values = st.sampled_from(EDGES) | json_values


def encode(value: Any, *, ascii_only: bool = True) -> bytes:
    """``value`` as Python writes JSON: NaN, Infinity and huge integers included, lone
    surrogates kept (escaped, or raw when not ``ascii_only``)."""
    text = json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)
    return text.encode("utf-8", "surrogatepass")


def _mutated(seed: dict[str, Any], changes: dict[str, Any], dropped: set[str]) -> dict[str, Any]:
    body = {k: v for k, v in seed.items() if k not in dropped}
    body.update(changes)
    return body


def mutated_bodies(
    seeds: Iterable[dict[str, Any]] = (COMPLETION, CHAT),
) -> st.SearchStrategy[bytes]:
    """A valid body with some fields replaced by hostile values and some dropped."""
    return st.builds(
        _mutated,
        st.sampled_from(list(seeds)),
        st.dictionaries(st.sampled_from(FIELDS), hostile_values, max_size=4),
        st.sets(st.sampled_from(("model", "prompt", "messages", "max_tokens")), max_size=1),
    ).flatmap(lambda body: st.sampled_from((encode(body), encode(body, ascii_only=False))))


def _deep(seed: dict[str, Any], field: str, opener: str, depth: int) -> bytes:
    closer = {"[": "]", '{"a":': "}"}[opener]
    head = encode({k: v for k, v in seed.items() if k != field})[:-1]
    return head + f', "{field}": {opener * depth}1{closer * depth}}}'.encode()


deep_bodies = st.builds(
    _deep,
    st.sampled_from((COMPLETION, CHAT)),
    st.sampled_from(("messages", "prompt", "stop", "stream_options", "logit_bias", "extra")),
    st.sampled_from(("[", '{"a":')),
    st.sampled_from((63, 65, 200, 256, 300, 1000, 1023, 1025, 5000)) | st.integers(1, 1500),
)


def bodies(seeds: Iterable[dict[str, Any]] = (COMPLETION, CHAT)) -> st.SearchStrategy[bytes]:
    """Any body: mutated valid ones most often, deep ones, any JSON value, bytes, text."""
    return st.one_of(
        mutated_bodies(seeds),
        deep_bodies,
        json_values.map(encode),
        st.binary(max_size=64),
        st.text(max_size=64).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


# -- headers -------------------------------------------------------------------------------

_TOKEN: Final = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
# Names the client library sets itself (or that would make it send something else than the
# body it was given), and the simulator's fault-injection hook, which answers 5xx on request.
_NOT_SENT: Final = frozenset(
    {"content-length", "transfer-encoding", "host", "connection", "expect", "upgrade",
     "content-encoding", "x-return-error", "te", "trailer"}
)  # fmt: skip
KNOWN_HEADERS: Final = (
    "content-type",
    "authorization",
    "x-api-key",
    "x-request-id",
    "x-request-timeout-seconds",
    "x-llm-d-tenant",
    "x-llm-d-inference-objective",
    "x-llm-d-inference-fairness-id",
    "x-llm-d-async-mode",
    "traceparent",
    "x-forwarded-for",
    "accept",
    "accept-encoding",
)
_VALUE_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f")
header_values = st.one_of(
    st.sampled_from(("", " ", "0", "-1", "1e9", "99999999999999999999", "application/json",
                     "text/plain", "application/x+json; charset=utf-8", "Bearer ", "a:b",
                     "default", "ünïcode", "x" * 129, "application/json, */*", "gzip")),
    st.text(_VALUE_CHARS, max_size=40),
    st.integers(1, 20_000).map(lambda n: "v" * n),
)  # fmt: skip
header_names = (st.sampled_from(KNOWN_HEADERS) | st.text(_TOKEN, min_size=1, max_size=24)).filter(
    lambda name: name.lower() not in _NOT_SENT
)
many_headers = st.integers(0, 160).map(lambda n: [(f"x-pad-{i}", "p") for i in range(n)])
header_lists = st.one_of(
    st.lists(st.tuples(header_names, header_values), max_size=8),
    st.tuples(st.lists(st.tuples(header_names, header_values), max_size=3), many_headers).map(
        lambda pair: pair[0] + pair[1]
    ),
)

# -- paths and methods ---------------------------------------------------------------------

_PATH_CHARS: Final = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@"
_SEGMENTS = st.sampled_from(
    ("v1", "completions", "chat", "requests", "models", "healthz", "readyz", "metrics", "..",
     ".", "", "%00", "%2F", "%ff", "%zz", "%", "%2e%2e", "x" * 300, "a%20b")
) | st.text(_PATH_CHARS, max_size=12)  # fmt: skip
paths = st.tuples(
    st.lists(_SEGMENTS, max_size=5), st.sampled_from(("", "?", "?a=1", "?%ff=%zz&&="))
).map(lambda parts: "/" + "/".join(parts[0]) + parts[1])
known_paths = st.sampled_from(
    ("/v1/completions", "/v1/chat/completions", "/v1/models", "/v1/embeddings", "/healthz",
     "/readyz", "/metrics", "/v1/requests/abc", "/v1/completions/", "/")
)  # fmt: skip
methods = st.sampled_from(
    ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE")
) | st.text(string.ascii_uppercase, min_size=1, max_size=10)


# -- sending and checking ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes


def client() -> aiohttp.ClientSession:
    """A client that opens a connection per request (an earlier hostile request must not
    leave a half-closed keep-alive connection to the next) and gives up after 30 s."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(force_close=True),
        timeout=aiohttp.ClientTimeout(total=30),
        skip_auto_headers=("Content-Type",),
    )


async def send(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
    body: bytes | None = None,
) -> Reply:
    """One request with the path sent as written (no re-quoting); the whole answer read."""
    async with session.request(
        method, URL(url, encoded=True), headers=list(headers), data=body
    ) as resp:
        return Reply(resp.status, await resp.read())


def assert_answered(reply: Reply, allowed: Iterable[int] = ()) -> None:
    """Not a server error, unless one of ``allowed`` (the system's real answer)."""
    assert reply.status < 500 or reply.status in set(allowed), (reply.status, reply.body[:500])


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Records logged at ERROR or above with an exception attached."""
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.exc_info
    ]


async def assert_sound(
    session: aiohttp.ClientSession,
    base: str,
    reply: Reply,
    caplog: pytest.LogCaptureFixture,
    allowed: Iterable[int] = (),
) -> None:
    """The three checks of every example: no 5xx (bar ``allowed``), no traceback logged, and
    the server at ``base`` still answers ``/healthz``. The status is a hypothesis event:
    ``--hypothesis-show-statistics`` shows how far the inputs got."""
    event(f"status {reply.status}")
    assert_answered(reply, allowed)
    assert tracebacks(caplog) == []
    health = await send(session, "GET", base + "/healthz")
    assert health.status == 200, health


def header_map(headers: Iterable[tuple[str, str]]) -> Mapping[str, str]:
    return {name.lower(): value for name, value in headers}
