"""Lines that share a system prompt, queued to run together (pure).

A model server keeps a prompt's prefix in its KV cache while it is used, and the router sends
a prompt to the endpoint that last served its prefix (the ``prefix-cache-scorer``). A batch's
lines in file order interleave their system prompts; run that way, each prefix is evicted
before its next line arrives once the prompts outgrow the cache. So each distinct system
prompt is a group, numbered in order of first appearance, and a line's queue score (its
deadline) is moved ``STEP`` seconds earlier per group after it: the processor takes a queue in
deadline order, so a group's lines go out one after another, group by group. Lines without a
system prompt keep the window's end. The shift is at most ``STEP`` x groups (50 s for 50,000
distinct prompts), nothing beside a 24 h window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["STEP", "PromptGroups", "system_prompt"]

STEP: Final = 0.001  # seconds between two groups' deadlines


def system_prompt(body: Mapping[str, Any]) -> str | None:
    """The leading system (or developer) turns of a chat body, as one key; None otherwise."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    parts: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("system", "developer"):
            break
        content = message.get("content")
        parts.append(content if isinstance(content, str) else repr(content))
    return "\n".join(parts) if parts else None


class PromptGroups:
    """Groups numbered by first appearance; :meth:`shift` is a group's deadline offset."""

    def __init__(self) -> None:
        self._rank: dict[str, int] = {}

    def add(self, key: str | None) -> None:
        if key is not None and key not in self._rank:
            self._rank[key] = len(self._rank)

    def __len__(self) -> int:
        return len(self._rank)

    def shift(self, key: str | None) -> float:
        """Seconds to move a line's deadline earlier: the first group most, none without."""
        rank = None if key is None else self._rank.get(key)
        return 0.0 if rank is None else (len(self._rank) - rank) * STEP
