"""Lines sharing a system prompt get one group and one deadline shift, first groups first."""

from __future__ import annotations

from sluiceway.batch.grouping import STEP, PromptGroups, system_prompt


def chat(*roles_and_texts: tuple[str, object]) -> dict[str, object]:
    return {"messages": [{"role": r, "content": t} for r, t in roles_and_texts]}


def test_the_key_is_the_leading_system_and_developer_turns() -> None:
    assert system_prompt(chat(("system", "be brief"), ("user", "hi"))) == "be brief"
    assert system_prompt(chat(("system", "a"), ("developer", "b"), ("user", "c"))) == "a\nb"
    assert system_prompt(chat(("user", "hi"), ("system", "late"))) is None
    assert system_prompt({"prompt": "completion"}) is None
    parts = [{"type": "text", "text": "x"}]
    assert system_prompt(chat(("system", parts))) == repr(parts)


def test_groups_shift_by_first_appearance() -> None:
    groups = PromptGroups()
    for key in ("b", "a", None, "b", "c"):
        groups.add(key)
    assert len(groups) == 3
    shifts = [groups.shift(k) for k in ("b", "a", "c", None, "unknown")]
    assert shifts == [3 * STEP, 2 * STEP, 1 * STEP, 0.0, 0.0]
