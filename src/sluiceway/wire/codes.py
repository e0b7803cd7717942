"""Result error codes (llm-d-async's) and their default messages."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["DEFAULT_MESSAGES", "ErrorCode"]


class ErrorCode(StrEnum):
    """``error_code`` of a result record for which no HTTP answer was received."""

    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    CANCELLED = "CANCELLED"
    GATE_DROPPED = "GATE_DROPPED"
    GATE_ERROR = "GATE_ERROR"
    INFERENCE_ERROR = "INFERENCE_ERROR"
    INVALID_REQUEST = "INVALID_REQUEST"


# Upstream's messages, so consumers matching on text keep working.
DEFAULT_MESSAGES: Final[dict[ErrorCode, str]] = {
    ErrorCode.DEADLINE_EXCEEDED: "deadline exceeded",
    ErrorCode.CANCELLED: "cancelled",
    ErrorCode.GATE_DROPPED: "Pool gating dropped request",
    ErrorCode.GATE_ERROR: "Pool gating error",
    ErrorCode.INFERENCE_ERROR: "Failed to send request to inference",
    ErrorCode.INVALID_REQUEST: "invalid request",
}
