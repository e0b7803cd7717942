"""Error codes and their default messages (llm-d-async's)."""

from __future__ import annotations

from sluiceway.wire import DEFAULT_MESSAGES, ErrorCode


def test_codes_are_pinned() -> None:
    assert [str(c) for c in ErrorCode] == [
        "DEADLINE_EXCEEDED",
        "CANCELLED",
        "GATE_DROPPED",
        "GATE_ERROR",
        "INFERENCE_ERROR",
        "INVALID_REQUEST",
    ]


def test_every_code_has_a_default_message() -> None:
    assert set(DEFAULT_MESSAGES) == set(ErrorCode)
    assert DEFAULT_MESSAGES[ErrorCode.DEADLINE_EXCEEDED] == "deadline exceeded"
