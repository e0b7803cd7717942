"""The shape of a queued request, checked before it is queued (pure).

A passthrough request is answered by the model server itself, which refuses a malformed body
at once. A queued one would wait in the queue first and fail minutes later, so wait and enqueue
requests are held to the same rules here and refused with 400 before anything is queued:

- the content type, when not empty, is JSON (``application/json`` or ``application/*+json``);
- ``/v1/completions``: ``prompt`` a string, or a non-empty list of strings, of token ids, or of
  lists of token ids;
- ``/v1/chat/completions``: ``messages`` a non-empty list of objects, each with a ``role``
  string and a ``content`` that is a string or a list of content parts (null or absent only for
  an assistant turn, which may carry tool calls instead);
- on both: the sampling parameters listed in :data:`_COMMON`, :data:`_COMPLETIONS` and
  :data:`_CHAT` have their OpenAI types and ranges (integers are JSON integers, numbers are
  finite). A null value is an unset one, as in the OpenAI API.

Other paths (embeddings, anything else) get only the body checks of ``intake.py``. Fields not
listed are passed through unchecked: this is not a full schema, only what a model server would
certainly refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from sluiceway.coordinator.answers import RequestRejected

__all__ = ["check_content_type", "check_queued_body"]

Check = Callable[[Any], bool]


def _positive_int(value: Any) -> bool:
    return type(value) is int and value > 0


def _non_negative_int(value: Any) -> bool:
    return type(value) is int and value >= 0


def _int(value: Any) -> bool:
    return type(value) is int


def _bool(value: Any) -> bool:
    return type(value) is bool


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _list(value: Any) -> bool:
    return isinstance(value, list)


def _number_in(low: float, high: float) -> Check:
    def check(value: Any) -> bool:
        return type(value) in (int, float) and math.isfinite(value) and low <= value <= high

    return check


def _top_logprobs(value: Any) -> bool:
    return _non_negative_int(value) and value <= 20


def _stop(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )


_POSITIVE: Final = (_positive_int, "a positive integer")
_PENALTY: Final = (_number_in(-2.0, 2.0), "a number from -2 to 2")
_COMMON: Final[dict[str, tuple[Check, str]]] = {
    "max_tokens": _POSITIVE,
    "n": _POSITIVE,
    "temperature": (_number_in(0.0, 2.0), "a number from 0 to 2"),
    "top_p": (_number_in(0.0, 1.0), "a number from 0 to 1"),
    "presence_penalty": _PENALTY,
    "frequency_penalty": _PENALTY,
    "stream": (_bool, "a boolean"),
    "stream_options": (_object, "an object"),
    "stop": (_stop, "a string or a list of strings"),
    "seed": (_int, "an integer"),
    "user": (_str, "a string"),
    "logit_bias": (_object, "an object"),
}
_COMPLETIONS: Final = {
    **_COMMON,
    "best_of": _POSITIVE,
    "echo": (_bool, "a boolean"),
    "logprobs": (_non_negative_int, "a non-negative integer"),
    "suffix": (_str, "a string"),
}
_CHAT: Final = {
    **_COMMON,
    "max_completion_tokens": _POSITIVE,
    "logprobs": (_bool, "a boolean"),
    "top_logprobs": (_top_logprobs, "an integer from 0 to 20"),
    "tools": (_list, "a list"),
    "response_format": (_object, "an object"),
}


def _invalid(message: str) -> RequestRejected:
    return RequestRejected(400, "invalid_request_body", message)


def check_content_type(value: str | None) -> None:
    """A queued body is JSON: no (or an empty) content type, ``application/json`` or
    ``application/*+json``."""
    if not value:
        return
    kind = value.partition(";")[0].strip().lower()
    main, _, sub = kind.partition("/")
    if main != "application" or not (sub == "json" or sub.endswith("+json")):
        raise RequestRejected(
            400, "invalid_content_type", f"the body must be application/json, not {kind!r}"
        )


def check_queued_body(doc: Mapping[str, Any], path: str) -> None:
    """RequestRejected (400) naming the first field a model server would refuse."""
    route = path.rstrip("/")
    if route.endswith("/chat/completions"):
        _check_messages(_required(doc, "messages"))
        _check_fields(doc, _CHAT)
    elif route.endswith("/completions"):
        _check_prompt(_required(doc, "prompt"))
        _check_fields(doc, _COMPLETIONS)


def _required(doc: Mapping[str, Any], name: str) -> Any:
    if name not in doc:
        raise _invalid(f"'{name}' is required")
    return doc[name]


def _check_fields(doc: Mapping[str, Any], rules: Mapping[str, tuple[Check, str]]) -> None:
    for name, (check, expected) in rules.items():
        value = doc.get(name)
        if value is not None and not check(value):
            raise _invalid(f"'{name}' must be {expected}, not {_shown(value)}")


def _token_ids(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_non_negative_int(t) for t in value)


def _check_prompt(prompt: Any) -> None:
    if isinstance(prompt, str) or _token_ids(prompt):
        return
    if (
        isinstance(prompt, list)
        and prompt
        and (all(isinstance(p, str) for p in prompt) or all(_token_ids(p) for p in prompt))
    ):
        return
    raise _invalid(
        "'prompt' must be a string, or a non-empty list of strings, of token ids or of lists "
        f"of token ids, not {_shown(prompt)}"
    )


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise _invalid(f"'messages' must be a non-empty list, not {_shown(messages)}")
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise _invalid(f"'{where}' must be an object, not {_shown(message)}")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise _invalid(f"'{where}.role' must be a non-empty string, not {_shown(role)}")
        content = message.get("content")
        if content is None and role != "assistant":
            raise _invalid(f"'{where}.content' is required for a {role!r} message")
        if content is not None and not _content(content):
            raise _invalid(
                f"'{where}.content' must be a string or a list of content parts, "
                f"not {_shown(content)}"
            )


def _content(content: Any) -> bool:
    return isinstance(content, str) or (
        isinstance(content, list) and all(isinstance(part, dict) for part in content)
    )


def _shown(value: Any) -> str:
    """How a refused value is named in the message: its JSON type, and short values whole."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 20 else "a string"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    return "an object"
