"""A queued body is held to what a model server would accept: OpenAI's completions and chat
shapes, JSON content types, typed sampling parameters."""

from __future__ import annotations

from typing import Any

import pytest

from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.validation import check_content_type, check_queued_body

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"
HI = [{"role": "user", "content": "hi"}]


def refused(doc: dict[str, Any], path: str) -> str:
    with pytest.raises(RequestRejected) as err:
        check_queued_body(doc, path)
    assert (err.value.status, err.value.code) == (400, "invalid_request_body")
    return str(err.value)


@pytest.mark.parametrize("prompt", ["hi", ["a", "b"], [1, 2, 3], [[1, 2], [3]], ""], ids=repr)
def test_completions_prompts_of_every_openai_shape_pass(prompt: Any) -> None:
    check_queued_body({"model": "m", "prompt": prompt, "max_tokens": 4}, COMPLETIONS)


@pytest.mark.parametrize(
    "messages",
    [
        HI,
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        [*HI, {"role": "assistant", "content": None, "tool_calls": []}],
        [{"role": "system", "content": "be brief"}, *HI],
    ],
)
def test_chat_messages_of_every_openai_shape_pass(messages: Any) -> None:
    check_queued_body({"model": "m", "messages": messages, "max_completion_tokens": 4}, CHAT)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_tokens", -5),
        ("max_tokens", 0),
        ("max_tokens", 2.5),
        ("max_tokens", "abc"),
        ("max_tokens", True),
        ("n", 0),
        ("temperature", 3),
        ("temperature", "hot"),
        ("top_p", 1.5),
        ("presence_penalty", -2.5),
        ("stream", "yes"),
        ("stop", [1]),
        ("seed", 1.5),
        ("logprobs", -1),
        ("best_of", 0),
        ("echo", 1),
        ("stream_options", []),
    ],
)
def test_completions_sampling_parameters_are_typed(field: str, value: Any) -> None:
    message = refused({"model": "m", "prompt": "p", field: value}, COMPLETIONS)
    assert message.startswith(f"'{field}' must be")


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_completion_tokens", -1), ("logprobs", 3), ("top_logprobs", 21), ("tools", {})],
)
def test_chat_parameters_are_typed(field: str, value: Any) -> None:
    message = refused({"model": "m", "messages": HI, field: value}, CHAT)
    assert message.startswith(f"'{field}' must be")


def test_null_is_an_unset_parameter() -> None:
    doc = {"model": "m", "prompt": "p", "max_tokens": None, "temperature": None, "stop": None}
    check_queued_body(doc, COMPLETIONS)


@pytest.mark.parametrize(
    ("prompt", "says"),
    [
        (5, "'prompt' must be a string"),
        ([], "not an empty list"),
        (["a", 1], "not a list"),
        ([-1], "not a list"),
        ({"text": "p"}, "not an object"),
    ],
    ids=repr,
)
def test_a_bad_prompt_is_refused(prompt: Any, says: str) -> None:
    assert says in refused({"model": "m", "prompt": prompt}, COMPLETIONS)


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ("hi", "'messages' must be a non-empty list, not the string 'hi'"),
        ([], "'messages' must be a non-empty list"),
        (["hi"], "'messages[0]' must be an object"),
        ([{"content": "hi"}], "'messages[0].role' must be a non-empty string"),
        ([{"role": "user"}], "'messages[0].content' is required"),
        ([{"role": "user", "content": 5}], "'messages[0].content' must be a string"),
        ([{"role": "user", "content": ["hi"]}], "a list of content parts"),
    ],
    ids=repr,
)
def test_bad_messages_are_refused(messages: Any, says: str) -> None:
    assert says in refused({"model": "m", "messages": messages}, CHAT)


def test_the_main_field_of_each_shape_is_required() -> None:
    assert refused({"model": "m"}, COMPLETIONS) == "'prompt' is required"
    assert refused({"model": "m", "prompt": "p"}, CHAT) == "'messages' is required"


def test_other_paths_are_not_shape_checked() -> None:
    check_queued_body({"model": "m", "input": 5, "max_tokens": "x"}, "/v1/embeddings")


@pytest.mark.parametrize(
    "value",
    [None, "", "application/json", "application/json; charset=utf-8", "application/x+json"],
)
def test_json_content_types_pass(value: str | None) -> None:
    check_content_type(value)


@pytest.mark.parametrize("value", ["text/plain", "application/x-www-form-urlencoded", "json"])
def test_other_content_types_are_refused(value: str) -> None:
    with pytest.raises(RequestRejected) as err:
        check_content_type(value)
    assert (err.value.status, err.value.code) == (400, "invalid_content_type")
