"""Request bodies checked as vLLM checks them: values or ApiError, never an exception."""

from __future__ import annotations

import orjson
import pytest

from sluiceway.sim import SimConfig
from sluiceway.sim.openai_request import ApiError, Kind, Parsed, parse_request

CFG = SimConfig()


def _parse(kind: Kind = "completion", **fields: object) -> Parsed | ApiError:
    body = {"model": "sim-model", **fields}
    if kind == "completion":
        body.setdefault("prompt", "hello there")
    else:
        body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return parse_request(orjson.dumps(body), kind, CFG)


def _ok(kind: Kind = "completion", **fields: object) -> Parsed:
    parsed = _parse(kind, **fields)
    assert isinstance(parsed, Parsed), parsed
    return parsed


def _error(kind: Kind = "completion", **fields: object) -> ApiError:
    parsed = _parse(kind, **fields)
    assert isinstance(parsed, ApiError), parsed
    assert parsed.status == 400
    return parsed


@pytest.mark.parametrize("prompt", ["", [], [""]])
def test_an_empty_prompt_is_refused(prompt: object) -> None:
    assert _error(prompt=prompt).param == "prompt"


def test_a_chat_message_without_a_role_is_refused() -> None:
    error = _error("chat", messages=[{"role": "system", "content": "x"}, {"content": "hi"}])
    assert error.param == "messages" and "messages[1].role" in error.message


def test_stop_takes_a_string_or_a_list_of_strings() -> None:
    assert _ok(stop="END").stop == ("END",)
    assert _ok(stop=["a", "", "b"]).stop == ("a", "b")
    assert _ok().stop == ()
    assert _error(stop=[1]).param == "stop"


def test_logprobs_as_vllm_reads_them() -> None:
    assert _ok(logprobs=3).logprobs == 3
    assert _ok().logprobs is None
    assert _ok("chat", logprobs=True).logprobs == 0
    assert _ok("chat", logprobs=True, top_logprobs=5).logprobs == 5
    assert _ok("chat", logprobs=False).logprobs is None
    assert _error(logprobs=21).param == "logprobs"
    assert _error(logprobs=-1).param == "logprobs"
    assert _error("chat", top_logprobs=2).param == "top_logprobs"
    assert _error("chat", logprobs=True, top_logprobs=99).param == "top_logprobs"


def test_echo_text_is_the_prompt_or_a_trailing_assistant_turn() -> None:
    assert _ok(echo=True).echo_text == "hello there"
    assert _ok().echo_text == ""
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sure,"}]
    assert _ok("chat", messages=messages, echo=True).echo_text == "Sure,"
    assert _ok("chat", echo=True).echo_text == ""


def test_max_tokens_param_is_kept_only_when_sent() -> None:
    assert _ok(max_tokens=7).max_tokens_param == 7
    assert _ok().max_tokens_param is None
